package lease

import (
	"strconv"
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

// A run's fate, from its record and what the view knows besides: the lease
// state of its slot and the pause in force.
func TestViewFate(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	start := now.Add(-time.Minute)
	running := map[string]string{"holder": "vm-1", "term": "7", "lastrunholder": "vm-1", "lastrunterm": "7",
		"lastrunstart": formatTime(start), "history0": "6," + strconv.FormatInt(start.Add(-time.Hour).Unix(), 10) + ",,,vm-0"}
	withEnd := func(exit string) map[string]string {
		md := map[string]string{}
		for k, v := range running {
			md[k] = v
		}
		md["lastrunend"] = formatTime(now.Add(-10 * time.Second))
		if exit != "" {
			md["lastexit"] = exit
		}
		return md
	}
	drain := map[string]string{"reason": "moving", "since": formatTime(now.Add(-30 * time.Second)), "drain": "true"}
	plainPause := map[string]string{"reason": "freeze", "since": formatTime(now.Add(-30 * time.Second))}
	oldDrain := map[string]string{"since": formatTime(start.Add(-time.Hour)), "drain": "true"}
	for _, tc := range []struct {
		name        string
		state       State
		md          map[string]string
		pause       map[string]string // nil: none
		want, older string            // the last run's fate, and the history entry's before it
	}{
		{"running", StateLeased, running, nil, "running", "lost its lease"},
		{"exited 0", StateAvailable, withEnd("0"), nil, "exited 0", "lost its lease"},
		{"exited 3", StateExpired, withEnd("3"), nil, "exited 3", "lost its lease"},
		{"killed by SIGTERM", StateAvailable, withEnd("143"), nil, "killed by signal 15 (SIGTERM)", "lost its lease"},
		{"killed by SIGKILL", StateAvailable, withEnd("137"), nil, "killed by signal 9 (SIGKILL)", "lost its lease"},
		{"an end without a status", StateAvailable, withEnd(""), nil, "ended, exit unknown", "lost its lease"},
		{"lost: expired", StateExpired, running, nil, "lost its lease", "lost its lease"},
		{"lost: released", StateAvailable, running, nil, "lost its lease", "lost its lease"},
		{"broken: breaking", StateBreaking, running, nil, "broken by an operator", "lost its lease"},
		{"broken: broken", StateBroken, running, nil, "broken by an operator", "lost its lease"},
		{"broken while paused", StateBroken, running, plainPause, "broken by an operator", "lost its lease"},
		{"drained: breaking", StateBreaking, running, drain, "drained", "lost its lease"},
		{"drained: released", StateAvailable, running, drain, "drained", "lost its lease"},
		{"a drain does not end a run still leased", StateLeased, running, drain, "running", "lost its lease"},
		{"a drain before the run began", StateAvailable, running, oldDrain, "lost its lease", "lost its lease"},
		{"an ended run stays ended under a drain", StateAvailable, withEnd("0"), drain, "exited 0", "lost its lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listed := []Listed{listedSlot("job", tc.state, tc.md, now)}
			if tc.pause != nil {
				listed = append(listed, listedSlot("job~pause", StateAvailable, tc.pause, now))
			}
			v := viewOf("job", listed, now, nil)
			runs := v.Runs()
			if len(runs) != 2 {
				t.Fatalf("runs = %+v, want the last run and one before", runs)
			}
			if got := v.Fate(runs[0]).String(); got != tc.want {
				t.Errorf("last run's fate = %q, want %q", got, tc.want)
			}
			if got := v.Fate(runs[1]).String(); got != tc.older {
				t.Errorf("older run's fate = %q, want %q", got, tc.older)
			}
			if f := v.Fate(runs[0]); f.Over() == (tc.want == "running") {
				t.Errorf("Over() = %v for %q", f.Over(), tc.want)
			}
		})
	}
}

// Each slot's current run takes its own slot's state: a broken slot 1 does
// not make slot 0's run broken.
func TestViewFatePerSlot(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	run := func(holder string, term int) map[string]string {
		return map[string]string{"holder": holder, "term": strconv.Itoa(term), "slots": "2", "lastrunholder": holder,
			"lastrunterm": strconv.Itoa(term), "lastrunstart": formatTime(now.Add(-time.Duration(term) * time.Minute))}
	}
	v := viewOf("pool", []Listed{
		listedSlot("pool", StateLeased, run("vm-1", 1), now),
		listedSlot("pool~slot-1", StateBroken, run("vm-2", 2), now),
	}, now, nil)
	got := map[string]string{}
	for _, r := range v.Runs() {
		got[r.Holder] = v.Fate(r).String()
	}
	if got["vm-1"] != "running" || got["vm-2"] != "broken by an operator" {
		t.Errorf("fates = %v, want vm-1 running, vm-2 broken by an operator", got)
	}
}
