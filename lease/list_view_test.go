package lease

import (
	"testing"
	"time"
)

// The slot count of a lease of several slots is the largest any slot
// records: before slot 0 exists (its first contender took another slot),
// one look at the others tells the count.
func TestGroupSlotCountFromEverySlot(t *testing.T) {
	date := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	five := map[string]string{"holder": "vm-2", "term": "1", "slots": "5"}
	for _, tc := range []struct {
		name   string
		listed []Listed
		want   int
	}{
		{"slot 1 alone", []Listed{listedSlot("p~slot-1", StateLeased, five, date)}, 5},
		{"slots 1 and 3", []Listed{listedSlot("p~slot-1", StateLeased, five, date), listedSlot("p~slot-3", StateAvailable, five, date)}, 5},
		{"slot 0 unclaimed, slot 2 claimed", []Listed{listedSlot("p", StateAvailable, nil, date), listedSlot("p~slot-2", StateLeased, five, date)}, 5},
		{"slot 0 records it", []Listed{listedSlot("p", StateLeased, five, date)}, 5},
		{"no count recorded: the highest slot", []Listed{listedSlot("p~slot-3", StateAvailable, nil, date)}, 4},
		{"one slot", []Listed{listedSlot("p", StateLeased, map[string]string{"term": "2"}, date)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := viewOf("p", tc.listed, date, nil).SlotCount; got != tc.want {
				t.Errorf("SlotCount = %d, want %d", got, tc.want)
			}
		})
	}
}
