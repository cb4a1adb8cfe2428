// slots.go: a lease of N > 1 slots (Config.Slots), each its own lease blob
// (NAME, NAME~slot-1, …: names.go) with the whole safety rule, its own term
// and run record. A contender polls with one listing of the prefix NAME
// (every slot's state and metadata, the pause marker), tries the free slots
// in random order, and writes nothing while all are held. The first step is
// a listing, not an optimistic acquire: it carries what must be checked
// before any write (another slot count, each slot's once-per window), and
// its ETag lets the claim skip its read: a free slot costs three round trips
// (list, acquire, claim), a held one the listing. This host's done marker
// lives apart (names.go), read before the first listing and once a slot is
// held. --once-per applies per slot; a contender skips when every slot had a
// run start within it: `--slots 2 --once-per 4m` lets up to two start per
// window.

package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"time"
)

// recordedOther is a slot count not n that any slot blob records; 0: none.
func (v *View) recordedOther(n int) int {
	for _, s := range v.Slots {
		if r := slotsMismatch(s.Props.Metadata, n); r != 0 {
			return r
		}
	}
	return 0
}

// freeSlots returns the slots of n to try, in random order: not held, with
// no run started within oncePer (0: off) but by our own claim (own), whose
// answer was lost: ours to adopt. If every slot, held or not, had another's
// run start within the window, it returns the skip instead.
func (v *View) freeSlots(n int, oncePer time.Duration, own func(*Properties) bool) (free []int, skip *SkipError) {
	spent := 0
	for i := range n {
		p := v.Slot(i).Props
		if withinWindow(p, oncePer) && !own(p) {
			spent++
			if skip == nil || p.LastRun.Start.After(skip.Start) {
				skip = skipError(p, oncePer)
			}
			continue
		}
		if !p.State.Held() {
			free = append(free, i)
		}
	}
	if spent < n {
		skip = nil
	}
	rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	return free, skip
}

// holder is the lowest held slot's read (OnWait, *HeldError); nil if none.
func (v *View) holder() *Properties {
	for _, s := range v.Slots {
		if s.Props.State.Held() {
			return s.Props
		}
	}
	return nil
}

// heldByHost reports whether a slot but mine is held by host (its metadata).
func (v *View) heldByHost(host string, mine int) bool {
	for _, s := range v.Slots {
		if s.Index != mine && s.Props.State.Held() && sameHost(s.Props.Holder, host) {
			return true
		}
	}
	return false
}

// readSlots is the read step of several slots: one listing, and what it
// says before any write (another slot count, this host done, every once-per
// window spent). Free slots go to acquireSlot unless Hold, a pause, or a
// slot held by this host keep them off (--once-per-host: wait for its run,
// which may write the done marker, rather than claim a slot to give back).
func (a *attempt) readSlots(ctx context.Context) (poll, step, error) {
	name, n := a.b.name, a.e.cfg.Slots
	v, err := a.list(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return poll{}, stepRead, ctx.Err()
	case err != nil && a.expired():
		return poll{}, stepRead, a.heldError(a.seen)
	case err != nil:
		return poll{}, stepRead, a.failed(ctx, err) // nil: the backoff is over
	}
	a.succeeded()
	if r := v.recordedOther(n); r != 0 {
		return poll{}, stepRead, slotsErr(name, n, r)
	}
	// A done marker of an earlier release (NAME~done/HOST: names.go).
	if a.w.OncePerHost != "" && slices.Contains(v.DoneHosts, a.w.OncePerHost) {
		return poll{}, stepRead, a.doneSkip()
	}
	free, skip := v.freeSlots(n, a.w.OncePer, a.ownClaim)
	if skip != nil {
		return poll{}, stepRead, skip
	}
	sameHost := a.w.OncePerHost != "" && v.heldByHost(a.w.OncePerHost, -1)
	if len(free) > 0 && !sameHost && !a.holding() && !a.paused(pauseText(v.Paused())) {
		return poll{view: v, slots: free}, stepFree, nil
	}
	return poll{}, stepRead, a.heldWait(ctx, v.holder())
}

func (a *attempt) list(ctx context.Context) (*View, error) {
	rctx, cancel := a.requestCtx(ctx)
	listed, date, err := a.b.c.List(rctx, a.b.name)
	cancel()
	if err != nil {
		return nil, err
	}
	return viewOf(a.b.name, listed, date, nil), nil
}

// acquireSlot is the acquire step of several slots: the free slots in turn
// until one is claimed (one taken since the listing, 409, sends it to the
// next); if none is, a poll interval (after a failure, after its backoff).
func (a *attempt) acquireSlot(ctx context.Context, last poll) (*Lease, step, error) {
	for _, i := range last.slots {
		b := a.b
		if i > 0 {
			var err error
			if b, err = b.c.Blob(SlotBlob(a.b.name, i)); err != nil {
				return nil, stepRead, err
			}
		}
		// An attempt on slot i's blob, with this one's lease ID and deadline.
		s := &attempt{e: a.e, b: b, w: a.w, leaseID: a.leaseID, nonce: a.nonce, deadline: a.deadline}
		// The pause was read with the listing, a round trip ago.
		l, err := s.try(ctx, answered(last.view.Slot(i).Props))
		a.reqStart = s.reqStart
		if err == nil {
			l.Name, l.Slot = a.b.name, i
			err = a.doneAfter(ctx, l) // once.go
			if err == nil {
				return l, stepRead, nil
			}
		} else {
			s.cleanup(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return nil, stepRead, ctx.Err()
		case errors.Is(err, errHeldNow):
			continue // taken since the listing: the next free slot
		case errors.Is(err, ErrSkipped):
			var skip *SkipError
			if errors.As(err, &skip) && skip.Reason == SkipOncePerHost {
				return nil, stepRead, err
			}
			continue // this slot ran within the once-per window
		case asStorageError(err) == nil:
			return nil, stepRead, err // another slot count recorded
		}
		if err := a.failed(ctx, err); err != nil {
			return nil, stepRead, err
		}
		break
	}
	return nil, stepRead, a.heldWait(ctx, last.view.holder())
}
