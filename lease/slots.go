package lease

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
//
// Also a contender's checks besides the once-per window, one slot or
// several: --once (someone succeeded), --once-per-host (the done marker
// NAME~done/HOST, names.go), the slot count recorded; and MarkDone. --once
// with several slots is refused: it promises one successful run for the
// fleet, and with N slots up to N contenders would start at once, none
// seeing the others' success until it has ended.

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
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

// freeSlots returns the slots of n to try (in order: the caller shuffles them): not held, with
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

// heldByHost reports whether a slot but mine is held by host: its holder
// (metadata) is host (--identity) or host:PID (the default).
func (v *View) heldByHost(host string, mine int) bool {
	for _, s := range v.Slots {
		h := s.Props.Holder
		if s.Index != mine && s.Props.State.Held() && (h == host || strings.HasPrefix(h, host+":")) {
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
		return poll{}, stepRead, &SkipError{Reason: SkipOncePerHost, Holder: a.w.OncePerHost}
	}
	free, skip := v.freeSlots(n, a.w.OncePer, a.ownClaim)
	if skip != nil {
		return poll{}, stepRead, skip
	}
	free = a.notGone(v, free)
	a.e.dice.shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	sameHost := a.w.OncePerHost != "" && v.heldByHost(a.w.OncePerHost, -1)
	if len(free) > 0 && !sameHost && !a.holding() && !a.paused(pauseText(v.Paused())) {
		return poll{view: v, slots: free}, stepFree, nil
	}
	return poll{}, stepRead, a.heldWait(ctx, v.holder())
}

// notGone notes what the listing v shows of each slot — the highest term,
// a slot held — in the slot's own attempt, as one slot's read does in its
// attempt, and drops from free the slots whose blob (or container) is
// gone under a holder seen before, until that holder's lease has passed
// (holderMayRun): its COMMAND may still run until its next renewal fails.
func (a *attempt) notGone(v *View, free []int) []int {
	for i := range a.e.cfg.Slots {
		s, err := a.slotAttempt(i)
		if err != nil {
			continue // slotAttempt fails the same way when the slot is tried
		}
		p := v.Slot(i).Props
		s.termSeen = max(s.termSeen, p.Term)
		switch {
		case p.State.Held():
			s.seen, s.goneAt = p, time.Time{}
		case p.Exists:
			s.goneAt = time.Time{}
		}
	}
	return slices.DeleteFunc(free, func(i int) bool {
		s := a.slots[i]
		return s != nil && !v.Slot(i).Props.Exists && s.holderMayRun()
	})
}

func (a *attempt) list(ctx context.Context) (*View, error) {
	rctx, cancel := a.requestCtx(ctx)
	listed, date, err := a.b.c.ListOwn(rctx, a.b.name)
	cancel()
	if err != nil {
		if ctx.Err() == nil && asStorageError(err) == nil {
			// The listing's own deadline passed (List says ctx's error):
			// a storage failure like any other, retried.
			err = a.b.c.fail("list blobs", err)
		}
		return nil, err
	}
	return viewOf(a.b.name, listed, date, nil), nil
}

// acquireSlot is the acquire step of several slots: the free slots in turn
// until one is claimed (one taken since the listing, 409, sends it to the
// next); if none is, a poll interval. A storage failure on a free slot is
// retried on it after its backoff; a slot whose claim's answer was lost
// keeps its lease and is tried again (acquired again with our lease ID,
// read back, our claim adopted), as one slot does: given back, its window
// would be spent with nothing run.
func (a *attempt) acquireSlot(ctx context.Context, last poll) (*Lease, step, error) {
	for _, i := range last.slots {
		s, err := a.slotAttempt(i)
		if err != nil {
			return nil, stepRead, err
		}
		// The pause was read with the listing, a round trip ago.
		pr := answered(last.view.Slot(i).Props)
		for {
			l, err := s.try(ctx, pr)
			a.reqStart = s.reqStart
			if err == nil {
				return l, stepRead, nil
			}
			if se := asStorageError(err); se != nil && se.Transient() && ctx.Err() == nil {
				// The slot was free: a failure is retried on it (within
				// the storage budget, --no-wait or not), and a claim of
				// ours that may stand is adopted there.
				if err := a.failed(ctx, err); err != nil {
					return nil, stepRead, err
				}
				pr = nil // again, with the reads sent along
				continue
			}
			if ctx.Err() != nil {
				// Asked to stop: Acquire takes back a claim of ours that
				// may stand on this slot (takeBack), then cleans up.
				return nil, stepRead, ctx.Err()
			}
			if s.claimSent {
				a.e.log.Warn("a claim whose answer was lost may stand on a slot given up (its lease broken or taken): history may show a run that never started, and it could not be taken back",
					"slot", i, "term", s.claimTerm, "error", err)
				s.claimSent = false
			}
			s.cleanup(ctx)
			switch {
			case ctx.Err() != nil:
				return nil, stepRead, ctx.Err()
			case errors.Is(err, errHeldNow):
				// taken since the listing: the next free slot
			case errors.Is(err, ErrSkipped):
				var skip *SkipError
				if errors.As(err, &skip) && skip.Reason == SkipOncePerHost {
					return nil, stepRead, err
				}
				// this slot ran within the once-per window
			case asStorageError(err) == nil:
				return nil, stepRead, err // another slot count recorded
			default:
				if err := a.failed(ctx, err); err != nil {
					return nil, stepRead, err
				}
			}
			break
		}
	}
	return nil, stepRead, a.heldWait(ctx, last.view.holder())
}

// slotAttempt is the attempt on slot i's blob, with this one's lease ID,
// nonce and deadline; the same one for the whole Acquire, so that what it
// knows of its claim (claimSent, unsure) lasts.
func (a *attempt) slotAttempt(i int) (*attempt, error) {
	if s := a.slots[i]; s != nil {
		return s, nil
	}
	b := a.b
	if i > 0 {
		var err error
		if b, err = b.c.Blob(SlotBlob(a.b.name, i)); err != nil {
			return nil, err
		}
	}
	s := &attempt{e: a.e, b: b, w: a.w, leaseID: a.leaseID, nonce: a.nonce, deadline: a.deadline, parent: a, slot: i}
	if a.slots == nil {
		a.slots = map[int]*attempt{}
	}
	a.slots[i] = s
	return s, nil
}

// slotsErr: the lease of blob records another slot count than this
// contender's (a usage error: exit 64).
func slotsErr(blob string, want, recorded int) *ConfigError {
	return configErr("slots", "lease %q is used with --slots %d, this contender has --slots %d: use the same count on every host, or another lease name",
		ParseBlobName(blob).Lease, recorded, want)
}

// pollCheck ends the wait, on any read, before any write: another slot count
// recorded, --once with a success recorded, a directory (isDirectory, blob.go).
func (a *attempt) pollCheck(p *Properties) error {
	if p.Directory {
		return directoryError(a.b.name)
	}
	if r := slotsMismatch(p.Metadata, a.e.cfg.Slots); r != 0 {
		return slotsErr(a.b.name, a.e.cfg.Slots, r)
	}
	if a.w.Once {
		if s := LastSuccess(p.Metadata); s != nil {
			return &SkipError{Reason: SkipOnce, Holder: s.Holder, Start: s.End}
		}
	}
	return nil
}

// hostDone is --once-per-host's check before the first acquire: a skip if
// this host's done marker exists, or, if not, an earlier release's marker
// (legacyDoneBlob): a host that finished before an upgrade stays done.
func (a *attempt) hostDone(ctx context.Context) error {
	if a.w.OncePerHost == "" {
		return nil
	}
	name := ParseBlobName(a.b.name).Lease
	for _, blob := range []string{DoneBlob(name, a.w.OncePerHost), legacyDoneBlob(name, a.w.OncePerHost)} {
		m, err := a.b.c.Blob(blob)
		if err != nil {
			return err
		}
		for { // a failure is retried within the storage budget, as any read
			rctx, cancel := a.requestCtx(ctx)
			p, err := m.getProperties(rctx)
			cancel()
			if err == nil {
				a.succeeded()
				if p.Exists {
					return &SkipError{Reason: SkipOncePerHost, Holder: a.w.OncePerHost}
				}
				break
			}
			if err := a.failed(ctx, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// doneAfter checks hostDone again once l is held: a contender that waited
// while this host's run succeeded does not run again (the marker is written
// before the release). With several slots a listing follows: another slot
// held by this host (a second leaderrun there) sends it back to waiting
// (errHeldNow); two that acquire at once each list after their own claim,
// so one sees the other. Any outcome but going on releases l.
func (a *attempt) doneAfter(ctx context.Context, l *Lease) error {
	if a.w.OncePerHost == "" {
		return nil
	}
	err := a.hostDone(ctx)
	for err == nil && a.e.cfg.Slots > 1 {
		v, lerr := a.parent.list(ctx)
		if lerr != nil {
			err = a.failed(ctx, lerr) // nil: retry after the backoff
			continue
		}
		a.succeeded()
		if v.heldByHost(a.w.OncePerHost, l.Slot) {
			a.e.log.Debug("another slot is held by this host: waiting", "host", a.w.OncePerHost)
			err = errHeldNow
		}
		break
	}
	if err == nil {
		return nil
	}
	if rerr := l.ReleaseUnused(ctx); rerr != nil {
		a.e.log.Debug("release after the done check failed", "error", rerr)
	}
	return err
}

// MarkDone records that host completed a run with status 0: the empty blob
// ~done/NAME~HOST, created If-None-Match: * (one there is kept). Call it
// while the lease is held, before Release, so the marker exists before
// anyone else can take the slot. Retries transient failures, requestTimeout.
func (l *Lease) MarkDone(ctx context.Context, host string) error {
	m, err := l.b.c.Blob(DoneBlob(l.Name, host))
	if err != nil {
		return err
	}
	return retryTransient(ctx, l.dice, requestTimeout, func(rctx context.Context) error {
		_, err := m.api.createBlob(rctx)
		if se := asStorageError(err); se != nil && (se.kind == kindExists || se.StatusCode == http.StatusPreconditionFailed) {
			return nil
		}
		return renamed(err, "create done marker")
	})
}
