package lease

// Two holes of the slot path that one slot does not have, against the
// in-memory model of the Blob service: a stop request while a slot's
// claim is in flight, and a slot's container deleted under its holder.

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
)

// A stop request (ctx cancelled) while a slot's claim has landed with its
// answer lost, and the first read back fails: as with one slot
// (TestClaimTakenBackOnStop), the claim is taken back, so the slot's
// once-per window is not spent with nothing run. The slot path instead
// forgets the claim (claimSent cleared, slots.go) before Acquire's
// takeBack can see it, and warns that the slot's lease was "broken or
// taken", which it was not.
func TestSlotClaimTakenBackOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		// One slot is held by another; the other is free.
		hold, err := blobsimSlotsElector(t, svc, "b", 2).Acquire(t.Context(), WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		free := SlotBlob("job", 1-hold.Slot)
		ctx, cancel := context.WithCancel(t.Context())
		written := false // the claim's write went out (Plan is never called concurrently)
		svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			switch {
			case r.Client != "a" || r.Blob != free:
			case r.Op == blobsim.OpSetMetadata && r.Seq == 0:
				written = true
				return blobsim.Plan{Lose: true, LoseAs: 0} // applied, then no answer
			case r.Op == blobsim.OpGetProperties && written:
				written = false
				return blobsim.Plan{Refuse: 503} // the first read back fails
			}
			return blobsim.Plan{}
		}))
		svc.OnApply(func(a blobsim.Applied) {
			if a.Client == "a" && a.Blob == free && a.Op == blobsim.OpSetMetadata && a.Seq == 0 {
				go func() { time.Sleep(100 * time.Millisecond); cancel() }() // SIGTERM, the answer still hanging
			}
		})
		_, err = blobsimSlotsElector(t, svc, "a", 2).Acquire(ctx, WaitOptions{NoWait: true, OncePer: time.Hour})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if b, _ := svc.Blob("leases", free); b.Metadata[mdLastRunStart] != "" {
			t.Errorf("the claim of a run that never started stands on %s: %v", free, b.Metadata)
		}
	})
}

// The container deleted under a slot's holder that a waiting follower saw:
// as with one slot (TestFollowerWaitsOutAHolderWhoseBlobIsGone), the
// follower waits out the lease duration it saw before it creates the slot
// again, so that the holder (which learns of the loss at its next
// renewal, then has its stop budget) has stopped its COMMAND first; and
// the slot's new term continues from the one it saw. A slot's attempt
// (slotAttempt) has neither what the follower saw (seen) nor the terms
// (termSeen): it creates the container at its next poll and claims term 1.
func TestSlotFollowerWaitsOutAHolderWhoseContainerIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		// Both slots claimed twice (term 2 on each: a term 1 again would be
		// a step back), then held by x and y, their leases kept.
		var held []*Lease
		for round := range 2 {
			held = held[:0]
			for _, c := range []string{"x", "y"} {
				l, err := blobsimSlotsElector(t, svc, c, 2).Acquire(ctx, WaitOptions{NoWait: true})
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, l)
			}
			if round == 0 {
				for _, l := range held {
					if err := l.Release(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for _, l := range held {
			l.Keep(ctx)
		}
		goneAt := make(chan time.Time, 1)
		go func() {
			time.Sleep(5 * time.Second)
			if _, err := blobsimContainer(t, svc, "operator").sdk.Delete(ctx, nil); err != nil {
				t.Error(err)
			}
			goneAt <- time.Now()
		}()
		l, err := blobsimSlotsElector(t, svc, "a", 2).Acquire(ctx, WaitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gone := <-goneAt
		if d := time.Since(gone); d < 15*time.Second {
			t.Errorf("slot %d created again and claimed %v after its container was deleted under its holder, want the 15 s lease waited out", l.Slot, d.Round(time.Millisecond))
		}
		for _, h := range held {
			if h.Slot == l.Slot && l.Term <= h.Term {
				t.Errorf("slot %d claimed with term %d after its holder's term %d: the term went back", l.Slot, l.Term, h.Term)
			}
		}
	})
}
