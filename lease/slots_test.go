package lease

import (
	"slices"
	"testing"
	"time"
)

func listedSlot(name string, state State, md map[string]string, date time.Time) Listed {
	return Listed{Name: name, Props: PropertiesOf(state, md, date)}
}

func TestRecordedSlots(t *testing.T) {
	for _, tc := range []struct {
		name     string
		md       map[string]string
		n        int
		recorded int // what recordedSlots says
		mismatch int // what slotsMismatch says for n
	}{
		{"never claimed", map[string]string{}, 3, 0, 0},
		{"claimed by one slot", map[string]string{"term": "4"}, 3, 1, 1},
		{"claimed by one slot, one slot", map[string]string{"term": "4"}, 1, 1, 0},
		{"same count", map[string]string{"term": "4", "slots": "3"}, 3, 3, 0},
		{"another count", map[string]string{"term": "4", "slots": "2"}, 3, 2, 2},
		{"slots against one", map[string]string{"term": "4", "slots": "2"}, 1, 2, 2},
		{"malformed reads as unknown", map[string]string{"term": "4", "slots": "x"}, 3, 0, 0},
		{"out of range reads as unknown", map[string]string{"term": "4", "slots": "51"}, 3, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recordedSlots(tc.md); got != tc.recorded {
				t.Errorf("recordedSlots = %d, want %d", got, tc.recorded)
			}
			if got := slotsMismatch(tc.md, tc.n); got != tc.mismatch {
				t.Errorf("slotsMismatch(%d) = %d, want %d", tc.n, got, tc.mismatch)
			}
		})
	}
}

func TestViewListing(t *testing.T) {
	date := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	held := map[string]string{"holder": "vm-1", "term": "3", "slots": "3"}
	listed := []Listed{
		listedSlot("job", StateLeased, held, date),
		listedSlot("job~done/vm-7", StateAvailable, nil, date),
		listedSlot("job~pause", StateAvailable, nil, date),
		listedSlot("job~slot-2", StateAvailable, map[string]string{"term": "1", "slots": "3"}, date),
		listedSlot("jobber", StateLeased, map[string]string{"term": "9"}, date), // another lease
		listedSlot("job~other", StateLeased, nil, date),
	}
	v := viewOf("job", listed, date, nil)
	if r := v.recordedOther(3); r != 0 {
		t.Errorf("recorded = %d, want 0 (jobber is another lease)", r)
	}
	if got := []State{v.Slot(0).Props.State, v.Slot(1).Props.State, v.Slot(2).Props.State}; !slices.Equal(got, []State{StateLeased, StateAbsent, StateAvailable}) {
		t.Errorf("states = %v", got)
	}
	if !slices.Contains(v.DoneHosts, "vm-7") || len(v.DoneHosts) != 1 {
		t.Errorf("done = %v, want vm-7", v.DoneHosts)
	}
	if h := v.holder(); h == nil || h.Holder != "vm-1" {
		t.Errorf("holder = %v, want vm-1's slot", h)
	}
	if !v.heldByHost("vm-1", 2) || v.heldByHost("vm-1", 0) || v.heldByHost("vm-2", 2) {
		t.Error("heldByHost is wrong")
	}

	// a slot beyond n that records another count, and NAME claimed by one slot
	for _, tc := range []struct {
		blobs []Listed
		n     int
		want  int
	}{
		{[]Listed{listedSlot("job~slot-4", StateAvailable, map[string]string{"term": "1", "slots": "5"}, date)}, 3, 5},
		{[]Listed{listedSlot("job", StateAvailable, map[string]string{"term": "8"}, date)}, 2, 1},
		{[]Listed{listedSlot("job", StateAvailable, map[string]string{}, date)}, 2, 0},
	} {
		if got := viewOf("job", tc.blobs, date, nil).recordedOther(tc.n); got != tc.want {
			t.Errorf("%s with n=%d: recorded = %d, want %d", tc.blobs[0].Name, tc.n, got, tc.want)
		}
	}
}

func TestFreeSlots(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	ran := func(ago time.Duration) map[string]string {
		return map[string]string{"term": "2", "slots": "4", "lastrunstart": formatTime(now.Add(-ago)), "lastrunholder": "vm"}
	}
	view := func(states []State, mds []map[string]string) *View {
		var listed []Listed
		for i, s := range states {
			listed = append(listed, listedSlot(SlotBlob("j", i), s, mds[i], now))
		}
		return viewOf("j", listed, now, nil)
	}
	four := []State{StateLeased, StateAvailable, StateBroken, StateExpired}
	fresh := []map[string]string{ran(time.Hour), ran(time.Hour), ran(time.Hour), ran(time.Hour)}

	t.Run("free slots, in order (readSlots shuffles them)", func(t *testing.T) {
		free, skip := view(four, fresh).freeSlots(4, 0, notOurs)
		if skip != nil {
			t.Fatal(skip)
		}
		if !slices.Equal(free, []int{1, 2, 3}) {
			t.Fatalf("free = %v, want 1 2 3", free)
		}
	})
	t.Run("all held: none free, no skip", func(t *testing.T) {
		states := []State{StateLeased, StateBreaking}
		free, skip := view(states, fresh[:2]).freeSlots(2, time.Minute, notOurs)
		if len(free) != 0 || skip != nil {
			t.Errorf("free = %v, skip = %v", free, skip)
		}
	})
	t.Run("once-per is per slot", func(t *testing.T) {
		mds := []map[string]string{ran(time.Hour), ran(10 * time.Second), ran(time.Hour), ran(time.Hour)}
		free, skip := view(four, mds).freeSlots(4, time.Minute, notOurs)
		if skip != nil || !slices.Equal(slices.Sorted(slices.Values(free)), []int{2, 3}) {
			t.Errorf("free = %v, skip = %v; want 2 and 3", free, skip)
		}
	})
	t.Run("a run within the window by our own claim is ours to adopt", func(t *testing.T) {
		mds := []map[string]string{ran(5 * time.Second), ran(10 * time.Second)}
		mds[1]["claim"] = "ours"
		own := func(p *Properties) bool { return p.Metadata["claim"] == "ours" }
		free, skip := view([]State{StateLeased, StateAvailable}, mds).freeSlots(2, time.Minute, own)
		if skip != nil || !slices.Equal(free, []int{1}) {
			t.Errorf("free = %v, skip = %v; want slot 1, whose run is our claim's", free, skip)
		}
	})
	t.Run("every slot ran within the window: skip", func(t *testing.T) {
		mds := []map[string]string{ran(5 * time.Second), ran(10 * time.Second)}
		free, skip := view([]State{StateLeased, StateAvailable}, mds).freeSlots(2, time.Minute, notOurs)
		if skip == nil || len(free) != 0 {
			t.Fatalf("free = %v, skip = %v; want a skip", free, skip)
		}
		if want := now.Add(-5 * time.Second); !skip.Start.Equal(want) {
			t.Errorf("skip names the run of %s, want the latest, %s", skip.Start, want)
		}
	})
}

// notOurs: no slot records a claim of ours.
func notOurs(*Properties) bool { return false }

func fmtInts(v []int) string {
	b := make([]byte, 0, len(v))
	for _, i := range v {
		b = append(b, byte('0'+i))
	}
	return string(b)
}
