package lease

// acquire.go: one Acquire call as a state machine (attempt): its poll loop,
// the optimistic acquire, creating a missing blob, holding off, giving up on
// storage failures, and the cleanup of a lease acquired but not handed over.

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"
)

// DefaultStorageTimeout: Acquire's budget for storage failures in a row.
const DefaultStorageTimeout = time.Minute

// attempt is the state of one Acquire call.
type attempt struct {
	e        *Elector
	b        *Blob // the blob acquired: the lease's, or one of its slots
	w        WaitOptions
	deadline time.Time // zero: no timeout
	// leaseID is proposed at every try: re-acquiring with the same ID is
	// idempotent, so a lost answer cannot make us wait for our own lease.
	leaseID string
	nonce   string // written with the claim (mdClaim): a claim whose answer was lost reads back as ours
	unsure  bool   // an acquire may have succeeded unseen (or a release failed): cleanup releases it
	// claimSent: a claim went out with no answer saying it failed, so the
	// blob may record our run: finding the lease held, read whose claim it is
	// before giving up (settle): another that finds ours skips; only we run it.
	claimSent bool
	claimBase map[string]string // the metadata our latest claim was made from (Lease.ReleaseUnused puts it back)
	claimTerm int64             // the term our latest claim wrote
	claimMD   map[string]string // and the metadata it wrote
	held      *Lease            // claimed but not handed over yet (the renewal before it failed)
	// With several slots: the attempt on each slot tried (slotAttempt),
	// and for such a one, the attempt it belongs to and its slot.
	slots        map[int]*attempt
	parent       *attempt
	slot         int
	ownHeldSince time.Time // when a read first found another holding our claim (heldWait)

	reqStart     time.Time   // when the latest request was sent
	failures     failureRun  // the storage failures in a row, since the latest success
	seen         *Properties // the latest held state read
	termSeen     int64       // the highest term any read showed: a blob made again continues from it
	goneAt       time.Time   // when the blob, seen held before, was first found gone (zero: not gone)
	notified     string      // holder and term last passed to OnWait
	contended    int         // acquires refused although a read said free
	reason       string      // Hold's latest answer
	pauseReason  string      // the latest marker read's pause (pauseText); "" if none
	pauseRefused bool        // the marker's read was refused (warned once)
	// trigger is the trigger marker as last read (nil: none, or not read);
	// triggerRefused: its read was refused (warned once). markersFresh: a
	// read step that would have skipped just read both markers
	// (triggerWaits), with pause freshPause: the acquire takes that read.
	trigger        *Trigger
	triggerRefused bool
	markersFresh   bool
	freshPause     string
	askReady       bool      // Ready is to be asked before the next request (once per poll)
	notReady       string    // Ready's latest answer: "" ready (or not asked)
	place          *Lease    // the deputy's place, while this follower holds it (deputy.go)
	placeAt        time.Time // when the place is next read, unless the term changes (zero: at the next poll)
	placeTerm      int64     // termSeen when the place was last read
}

// Why an acquire did not claim the lease, besides failures and skips.
var (
	errHeldNow   = errors.New("lease: held (acquire refused)")
	errGoneNow   = errors.New("lease: blob gone under a holder (not created yet)")
	errPausedNow = errors.New("lease: paused") // the acquire was undone
)

type step int // the state an attempt is in

const (
	stepAcquire step = iota // acquire unread: the optimistic first one, or a retry after a failure (one slot)
	stepRead                // read the blob, or list the slots; found held, wait a poll interval or give up
	stepFree                // the latest read found the lease free: acquire, after the checks that may hold off
)

// poll is what the latest read found.
type poll struct {
	free  *Properties // one slot: the read that found the lease free (nil if none)
	view  *View       // several: the listing
	slots []int       // and its free slots, in the order to try
}

// run is the poll loop, until the lease is claimed or the attempt gives up.
func (a *attempt) run(ctx context.Context) (*Lease, error) {
	next := stepAcquire
	if a.w.ReadFirst || a.e.cfg.Slots > 1 {
		next = stepRead
	}
	var (
		last poll // the latest read
		l    *Lease
		err  error
	)
	for l == nil && err == nil {
		if err = a.ready(ctx); err != nil {
			break
		}
		switch {
		case next == stepRead && a.e.cfg.Slots > 1:
			last, next, err = a.readSlots(ctx) // slots.go
		case next == stepRead:
			last, next, err = a.read(ctx)
		case a.e.cfg.Slots > 1:
			l, next, err = a.acquireSlot(ctx, last) // slots.go
		default:
			l, next, err = a.acquireOne(ctx, last.free, next == stepAcquire)
		}
	}
	return l, err
}

// acquireOne is the acquire step of one slot: unread (the optimistic one, or
// a retry), or after a read that found the lease free (free) and the marker's
// read. A blob gone under a holder, Hold or a pause keep it off.
func (a *attempt) acquireOne(ctx context.Context, free *Properties, unread bool) (*Lease, step, error) {
	again := stepRead // a blob gone under a holder is waited out in the step it was found in
	if unread {
		again = stepAcquire
	}
	if free != nil && !free.Exists && a.holderMayRun() {
		return nil, again, a.giveUpOrWait(ctx, a.seen)
	}
	if a.holding() {
		return nil, stepRead, a.giveUpOrWait(ctx, free) // poll (reads only) until Hold lets go
	}
	var pr *inflight // a follower's poll read, the claim's to reuse (Acquire's doc)
	if !unread {
		reason := a.freshPause
		if !a.markersFresh {
			a.reqStart = time.Now()
			var err error
			if reason, err = a.readMarkers(ctx); err != nil {
				return nil, stepRead, a.failed(ctx, err)
			}
			a.succeeded()
		}
		a.markersFresh, a.freshPause = false, ""
		if a.paused(reason) {
			return nil, stepRead, a.giveUpOrWait(ctx, free)
		}
		pr = answered(free)
	}
	l, err := a.try(ctx, pr)
	if err == nil {
		return l, stepRead, nil
	}
	next, err := a.settle(ctx, err)
	return nil, next, err
}

// settle decides what follows an acquire that did not claim the lease: poll
// (stepRead, nil), retry after a failure's backoff (stepAcquire), give up.
func (a *attempt) settle(ctx context.Context, err error) (step, error) {
	switch {
	case ctx.Err() != nil:
		return stepRead, ctx.Err()
	case errors.Is(err, errPausedNow), errors.Is(err, errGoneNow):
		// Given back unclaimed as paused, or the blob gone under a holder not
		// waited out yet: from now on, poll.
		a.succeeded()
		return stepRead, a.giveUpOrWait(ctx, a.seen)
	case errors.Is(err, errHeldNow) && a.claimSent: // read whose claim it is (claimSent)
		a.succeeded()
		return stepRead, nil
	case errors.Is(err, errHeldNow) && a.w.NoWait && a.w.HeldIsEnough:
		return stepRead, &HeldError{}
	case errors.Is(err, errHeldNow):
		a.succeeded()
		a.contended++
		if a.contended > 1 {
			// A read said free, the acquire said held: do not spin.
			return stepRead, a.giveUpOrWait(ctx, a.seen)
		}
		return stepRead, nil
	case asStorageError(err) == nil:
		return stepRead, err // *SkipError
	}
	return stepAcquire, a.failed(ctx, err)
}

// read is one slot's read step (a poll, or after a refused optimistic
// acquire): stepFree if the lease is free, else read again after a
// failure's backoff or a poll interval.
func (a *attempt) read(ctx context.Context) (poll, step, error) {
	a.markersFresh = false
	rctx, cancel := a.requestCtx(ctx)
	p, err := a.b.getProperties(rctx)
	cancel()
	if err != nil {
		return poll{}, stepRead, a.failed(ctx, err)
	}
	a.succeeded()
	a.termSeen = max(a.termSeen, p.Term)
	if p.Exists {
		a.goneAt = time.Time{}
	}
	if !a.ownClaim(p) {
		a.claimOverwritten(p)
		// A claim of ours still to take back does not count: what is due
		// is judged as if it had been taken back, as our next claim's
		// write will.
		p = a.takeBackHeld(p)
	}
	if err := a.skipAtRead(p); err != nil {
		// A skip, unless the lease is free and a trigger waits to run
		// (the claim runs it): read only then, never per poll of a held
		// lease.
		var skip *SkipError
		if !errors.As(err, &skip) || p.State.Held() || !a.triggerWaits(ctx, p) {
			return poll{}, stepRead, err
		}
	}
	if !p.State.Held() {
		return poll{free: p}, stepFree, nil
	}
	a.contended = 0
	return poll{}, stepRead, a.heldWait(ctx, p)
}

// skipAtRead is what a read p tells before any acquire: another --slots
// recorded (an error), or a skip, held or free (the claim checks again):
// --once done, a run started within the --once-per window, or, scheduled,
// an occurrence started, none due, one missed, a retry not due or none
// left. One due but held waits or gives up as held.
func (a *attempt) skipAtRead(p *Properties) error {
	if err := a.pollCheck(p); err != nil {
		return err // --once, or another --slots recorded (slots.go)
	}
	if a.ownClaim(p) {
		return nil
	}
	if withinWindow(p, a.w.OncePer) {
		return skipError(p, a.w.OncePer)
	}
	if p.Exists {
		if _, err := a.due(p); err != nil {
			return err
		}
	}
	return nil
}

// triggerWaits is asked when a read of the free lease p would skip, for a
// line that takes triggers: it reads the trigger marker (one request) and
// reports whether a trigger waits to run that no claim consumed and, read
// only then, no pause holds off; the acquire that follows takes that read
// of the markers as its own.
func (a *attempt) triggerWaits(ctx context.Context, p *Properties) bool {
	if !a.takesTriggers() {
		return false
	}
	rctx, cancel := a.requestCtx(ctx)
	a.readTrigger(rctx)
	cancel()
	if !a.trigger.pendingIn(p) {
		return false
	}
	a.reqStart = time.Now()
	reason, err := a.readMarkers(ctx)
	if err != nil {
		a.e.log.Debug("could not read the lease's markers", "error", err)
		return false
	}
	a.succeeded()
	if reason != "" || !a.trigger.pendingIn(p) {
		return false
	}
	a.e.log.Debug("a trigger waits to run", "by", a.trigger.By, "at", a.trigger.At)
	a.markersFresh, a.freshPause = true, reason
	return true
}

// try sends one acquire (creating a missing container and blob) and claims
// the term. pr, if not nil, is the poll read that found the lease free, for
// the claim to reuse; if nil (the optimistic acquire), the blob and marker
// are read together once acquired, and the lease is given back unclaimed
// (errPausedNow) if paused or if the marker's read failed.
//
// A claim that failed for a maybe transient reason keeps the lease (unsure),
// even past its stop deadline (no COMMAND runs yet; unrenewed, it lapses):
// the write may have landed unanswered, and the next try re-acquires with
// our lease ID and finds our nonce (claim.go). Given back, it would let
// another in to find our claim and skip, while we find it held.
func (a *attempt) try(ctx context.Context, pr *inflight) (*Lease, error) {
	b, cfg := a.b, a.e.cfg
	sent, ans, err := a.acquire(ctx)
	if se := asStorageError(err); se != nil && (se.kind == kindBlobMissing || se.kind == kindContainerMissing) {
		if a.holderMayRun() {
			return nil, errGoneNow
		}
		rctx, cancel := a.requestCtx(ctx)
		cerr := b.ensureBlob(rctx, se.kind == kindContainerMissing)
		cancel()
		if cerr != nil {
			return nil, cerr
		}
		sent, ans, err = a.acquire(ctx)
	}
	if se := asStorageError(err); se != nil {
		switch {
		case se.kind == kindTransient:
			a.unsure = true // the answer may have been lost
		case se.kind == kindBlobMissing || se.kind == kindContainerMissing:
			se.kind = kindTransient // deleted right after we created it
		case se.kind == kindHeld || se.StatusCode == http.StatusConflict || se.StatusCode == http.StatusPreconditionFailed:
			// Held by another, not with our lease ID (every acquire of ours
			// proposes it): none of ours landed unseen, unless the refusal
			// says breaking, which may be our lease being broken.
			if se.Code != codeLeaseBreaking {
				a.unsure = false
			}
			return nil, errHeldNow
		}
		return nil, se
	}
	a.unsure = true
	rtt := time.Since(sent)
	if pr == nil {
		pr = a.readAlong(ctx)
		// A claim of ours that may stand was decided before any pause
		// read now: it is finished (adopted, or made), not given up.
		if !a.claimSent {
			reason, err := a.readMarkers(ctx)
			if err == nil && a.paused(reason) {
				err = errPausedNow
			}
			if err != nil {
				pr.abandon()
				a.cleanup(ctx)
				return nil, err
			}
		}
	}
	defer pr.abandon()
	l := newLease(b, cfg, a.e.dice, a.leaseID, sent, ans.Date)
	if a.parent != nil {
		l.Name, l.Slot = a.parent.b.name, a.slot
	}
	if err := a.claim(ctx, l, reusable(pr, ans, rtt)); err != nil {
		if se := asStorageError(err); se == nil || !se.Transient() {
			a.cleanup(ctx)
		}
		return nil, err
	}
	a.held = l // claimed: until handed over, cleanup takes the claim back
	if ctx.Err() != nil {
		// Asked to stop as the claim landed: Acquire takes it back.
		a.unsure, a.held = false, nil
		return l, nil
	}
	if err := a.doneAfter(ctx, l); err != nil { // slots.go: l released if so
		a.unsure, a.held = false, nil
		return nil, err
	}
	// The last check before the lease is handed over, after every request
	// of the acquire: COMMAND never starts on a lease about to be lost.
	if time.Until(l.stopAt()) < l.renewTry() {
		if err := a.refresh(ctx, l); err != nil {
			// The lease may lapse, others write, and the next try acquire
			// it again with our lease ID: its take-back reads the blob first.
			l.lapsed = true
			return nil, err
		}
	}
	a.unsure, a.held = false, nil
	a.e.log.Debug("acquired lease", "url", b.url, "term", l.Term, "identity", cfg.Identity)
	return l, nil
}

// refresh renews a lease whose claim took so long (a throttled service, a
// starved host, a done check retried) that no renewal try fits before its
// stop deadline: as it is, it would be lost as COMMAND starts. It is a
// Renew Lease, never an acquire: an acquire with our lease ID succeeds on a
// lease that lapsed, or was broken, and was since taken, claimed and
// released by another, whose claim then stands over ours; a renewal is
// refused once the blob was leased again since ours lapsed. If it fails,
// the lease is kept (unsure) and the failure counts as transient: the next
// try acquires again and reads the blob, adopting our claim only if it
// still stands (claim.go).
func (a *attempt) refresh(ctx context.Context, l *Lease) error {
	a.e.log.Debug("the claim took until close to the stop deadline: renewing before handing the lease over",
		"stop_in", time.Until(l.stopAt()).Round(time.Millisecond))
	rctx, cancel := a.requestCtx(ctx)
	defer cancel()
	if a.w.OnTry != nil {
		a.w.OnTry()
	}
	sent := time.Now()
	ans, err := a.b.api.renewLease(rctx, a.leaseID)
	if se := asStorageError(err); se != nil {
		retry := *se // even a refusal: our lease lapsed, and our claim waits for us
		retry.kind = kindTransient
		return &retry
	}
	if err != nil {
		return err
	}
	l.renewed(sent, ans.Date)
	return nil
}

// cleanup releases, from a fresh context, a lease that this attempt may hold
// unseen (unsure) or got but will not hand over. If that fails, unsure
// stays, and the cleanup at the end of Acquire tries again.
func (a *attempt) cleanup(ctx context.Context) {
	for _, i := range slices.Sorted(maps.Keys(a.slots)) { // in order: a run repeats
		a.slots[i].cleanup(ctx)
	}
	if l := a.held; l != nil {
		// A claim made, not handed over (the renewal before the handover
		// failed): taken back, or one warning that it could not be.
		a.held, a.unsure = nil, false
		if err := l.ReleaseUnused(ctx); err != nil {
			a.e.log.Debug("release after a claim not handed over failed", "error", err)
		}
		return
	}
	if !a.unsure {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	_, err := a.b.api.releaseLease(rctx, a.leaseID)
	if se := asStorageError(err); se == nil || se.leaseGone() {
		a.unsure = false
		return
	}
	a.e.log.Debug("release after a failed claim failed", "error", err)
}

// acquire sends one Acquire Lease after OnTry; sent is t_ok if it succeeds.
func (a *attempt) acquire(ctx context.Context) (sent time.Time, ans answer, err error) {
	rctx, cancel := a.requestCtx(ctx)
	defer cancel()
	if a.w.OnTry != nil {
		a.w.OnTry()
	}
	sent = time.Now()
	ans, err = a.b.api.acquireLease(rctx, a.leaseID, int(a.e.cfg.Duration/time.Second))
	return sent, ans, err
}
