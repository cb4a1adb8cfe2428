package main

// The slots figure: 50 contenders on a lease of five slots, side by side
// with the same crowd on one slot. Waiting costs one listing per poll, so
// the request rate must stay that of one lease, not five times it.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/chaos"
)

// slotCount is the slots figure's --slots.
const slotCount = 5

// slotsFigure runs the crowd on one slot and on slotCount slots.
func (b *bench) slotsFigure(ctx context.Context) []crowdResult {
	n := 50
	if b.o.quick {
		n = 20
	}
	var out []crowdResult
	for _, slots := range []int{1, slotCount} {
		if ctx.Err() != nil {
			break
		}
		progress(fmt.Sprintf("slots: %d contenders on %d slot(s)", n, slots))
		out = append(out, b.crowdOn(ctx, n, slots))
	}
	return out
}

// slotGaps pairs the children's ends and begins in time order: the k-th end
// frees a slot that the (slots+k)-th begin takes (the first slots begins
// follow the holders' release). It returns those end → next begin gaps and
// the most children that ran at one instant.
func slotGaps(children []chaos.Proc, slots int) (gaps sample, most int) {
	var begins, ends []time.Time
	for _, c := range children {
		begins = append(begins, c.Begin)
		ends = append(ends, c.End)
	}
	slices.SortFunc(begins, time.Time.Compare)
	slices.SortFunc(ends, time.Time.Compare)
	for k := 0; slots+k < len(begins) && k < len(ends); k++ {
		gaps = append(gaps, begins[slots+k].Sub(ends[k]))
	}
	// the most at once: sweep begins and ends (an end at the same instant
	// as a begin comes first)
	running, i, j := 0, 0, 0
	for i < len(begins) {
		if j < len(ends) && !ends[j].After(begins[i]) {
			running--
			j++
			continue
		}
		running++
		most = max(most, running)
		i++
	}
	return gaps, most
}

// reportSlots prints the slots figure.
func reportSlots(pf printer, b *bench, r *results) {
	pf("### 8. Many contenders on a lease of %d slots\n\n", slotCount)
	if len(r.slots) == 0 {
		pf("Not measured.\n\n")
		return
	}
	pf("The crowd of figure 6 (`--poll-interval %s`, request rate over %s, a %s command each) on one slot and on `--slots %d`: as many holders keep every slot while the contenders wait, then they end and the contenders pass the slots around. A waiting contender lists the lease's blobs (one request for all slots) per poll.\n\n",
		b.o.crowdPoll, b.o.crowdWatch, b.o.crowdRun, slotCount)
	pf("| contenders | slots | all waiting: requests/s (peak in 1 s) | per contender | writes while waiting | commands run | most at once | end → next begin p50 / p95 | passing around: requests/s |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.slots {
		if c.started == 0 {
			pf("| %d | %d | n/a | | | | | | %s |\n", c.n, c.slots, c.err)
			continue
		}
		wr := float64(c.waiting.Reads+c.waiting.Writes) / c.watch.Seconds()
		most := fmt.Sprint(c.mostAtOnce)
		if c.mostAtOnce > c.slots {
			most = "**" + most + "**"
		}
		runRate := "n/a"
		if c.passAround > 0 {
			runRate = fcount(float64(c.during.Reads+c.during.Writes) / c.passAround.Seconds())
		}
		pf("| %d | %d | %s (%d) | %s/s | %d | %d of %d | %s | %s | %s |\n", c.n, c.slots, fcount(wr), c.peakWait,
			fcount(wr/float64(c.n)), leaseWrites(c.waiting), c.ran, c.n, most, fq(c.gaps), runRate)
	}
	pf("\n")
}
