package e2e

// The end-to-end checker of runs under --slots: at most N at every instant,
// each on its own slot.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// recordSlot reads the slot=SLOT field of an lrchild record; -1 if absent.
func recordSlot(fields []string) int {
	last := fields[len(fields)-1]
	if v, ok := strings.CutPrefix(last, "slot="); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return -1
}

// slotruns [-runs R] FILE N checks the runs lrchild -log recorded under
// --slots N: every run ended and was told a slot from 0 to N−1; at no
// instant did more than N run, nor two on the same slot; at some instant
// exactly N ran; each slot's terms grew. With -runs, there were exactly R
// runs.
func cmdSlotRuns(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! slotruns")
	}
	wantRuns := -1
	if len(args) >= 2 && args[0] == "-runs" {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		wantRuns, args = n, args[2:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: slotruns [-runs R] FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	runs, err := readRuns(ts.MkAbs(args[0]))
	ts.Check(err)
	if wantRuns >= 0 && len(runs) != wantRuns {
		ts.Fatalf("%d runs, want %d", len(runs), wantRuns)
	}
	peak, err := checkSlots(runs, n)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	if peak != n {
		ts.Fatalf("at most %d ran at once, want %d at some moment", peak, n)
	}
	ts.Logf("%d runs, at most %d at once, each on its own slot", len(runs), peak)
}

// checkSlots checks runs against n slots and returns how many ran at once
// at the busiest instant.
func checkSlots(runs []run, n int) (peak int, err error) {
	type edge struct {
		at    time.Time
		begin bool
		r     run
	}
	var edges []edge
	lastTerm := map[int]int64{}
	sorted := append([]run(nil), runs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].begin.Before(sorted[j].begin) })
	for _, r := range sorted {
		if !r.ended {
			return 0, fmt.Errorf("%s did not end", r.id)
		}
		if r.slot < 0 || r.slot >= n {
			return 0, fmt.Errorf("%s was told slot %d, want 0 to %d", r.id, r.slot, n-1)
		}
		if r.term <= lastTerm[r.slot] {
			return 0, fmt.Errorf("slot %d: term did not grow: %s after term %d", r.slot, r.id, lastTerm[r.slot])
		}
		lastTerm[r.slot] = r.term
		edges = append(edges, edge{r.begin, true, r}, edge{r.end, false, r})
	}
	// ends before begins at the same instant: touching runs do not overlap
	sort.SliceStable(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return !edges[i].begin && edges[j].begin
		}
		return edges[i].at.Before(edges[j].at)
	})
	running := map[int]run{}
	for _, e := range edges {
		if !e.begin {
			delete(running, e.r.slot)
			continue
		}
		if o, busy := running[e.r.slot]; busy {
			return 0, fmt.Errorf("slot %d: %s began while %s ran", e.r.slot, e.r.id, o.id)
		}
		running[e.r.slot] = e.r
		if len(running) > n {
			return 0, fmt.Errorf("%d runs at once at %s, more than %d", len(running), e.at.Format(time.RFC3339Nano), n)
		}
		peak = max(peak, len(running))
	}
	return peak, nil
}
