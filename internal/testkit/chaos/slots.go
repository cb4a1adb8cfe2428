package chaos

// The slots variant of a trial (Trial.Slots > 1): the lease has N slots,
// fillers hold the N−1 slots the holder does not, for the whole trial, and
// the judge checks that no more than N groups ran at any instant (and, as
// for one slot, that the holder's and the follower's never overlapped: the
// follower can only take the holder's slot).

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// fillerPrefix begins the identities of the fillers: filler1, filler2, …
const fillerPrefix = "filler"

// SlotsOK reports whether the scenario can run on a lease of several
// slots: its fault touches the holder alone (an operator's break, without
// --slot, and a deleted container touch every slot), and there is no
// deputy on a lease of several slots.
func (k Kind) SlotsOK() bool { return k != Break && k != StorageLoss && k != Deputy }

func (t *trial) slotFlags() []string {
	if t.res.Slots <= 1 {
		return nil
	}
	return []string{"--slots", strconv.Itoa(t.res.Slots)}
}

// startFillers starts Slots−1 leaderrun processes that talk to the storage
// directly and hold the other slots, and waits until each one's child runs.
func (t *trial) startFillers(ctx context.Context) error {
	for i := 1; i < t.res.Slots; i++ {
		id := fillerPrefix + strconv.Itoa(i)
		env := append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+t.env.storage.ConnString)
		args := append([]string{"-l", t.res.Lease, "--container", t.res.Container, "--identity", id, "--poll-interval", FollowerPoll.String()},
			t.slotFlags()...)
		args = append(args, "--", t.env.Child, "-log", t.rec.path)
		p, err := t.launch(id, env, args)
		if err != nil {
			return err
		}
		t.fillers = append(t.fillers, p)
		deadline := time.Now().Add(startWait)
		for !t.rec.has(id) && !p.Exited() && time.Now().Before(deadline) {
			if err := t.rec.Poll(); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("interrupted while starting %s", id)
			case <-time.After(pollEvery):
			}
		}
		if !t.rec.has(id) {
			return fmt.Errorf("%s's child did not start (%s)%s", id, exitOf(p, p.Exited()), testenv.LogTail(p.Log))
		}
	}
	return nil
}

func (t *trial) stopFillers() {
	for _, p := range t.fillers {
		p.Stop(stopWait)
	}
}

// withoutFillers leaves out the fillers' processes.
func withoutFillers(procs []Proc) []Proc {
	return slices.DeleteFunc(slices.Clone(procs), func(p Proc) bool { return strings.HasPrefix(p.Owner, fillerPrefix) })
}

// mostAtOnce is the most process groups (one per owner: a child with its
// grandchildren) that ran at one instant.
func mostAtOnce(procs []Proc) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var owners []string
	for _, p := range procs {
		if !slices.Contains(owners, p.Owner) {
			owners = append(owners, p.Owner)
		}
	}
	var edges []edge
	for _, o := range owners {
		g, _ := GroupOf(procs, o)
		edges = append(edges, edge{g.Begin, 1}, edge{g.End, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a begin at the same instant
	})
	most, n := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}
