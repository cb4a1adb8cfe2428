// acquire.go: one Acquire call as a state machine (attempt): the optimistic
// acquire, the follower's poll loop with reads, creating a missing blob,
// holding off while WaitOptions.Hold says so or the lease is paused
// (pausecheck.go), giving up on storage failures,
// and the cleanup of a lease acquired but not handed over.

package lease

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// DefaultStorageTimeout is how long Acquire retries storage failures in a
// row when neither WaitOptions.Timeout nor StorageTimeout says otherwise.
const DefaultStorageTimeout = time.Minute

// attempt is the state of one Acquire call.
type attempt struct {
	e        *Elector
	b        *Blob // the blob acquired: the lease's, or one of its slots
	w        WaitOptions
	deadline time.Time // zero: no timeout
	// leaseID is proposed at every try of this Acquire call: re-acquiring
	// with the same ID is idempotent, so a lost answer cannot make us
	// wait for our own lease.
	leaseID string
	// nonce is written with the claim (mdClaim): a claim whose answer was
	// lost is recognised as ours when it is read back (claim.go).
	nonce string
	// unsure: an acquire with leaseID may have succeeded unseen (or a
	// release failed); cleanup releases it.
	unsure bool

	reqStart  time.Time   // when the latest request was sent
	failures  failureRun  // the storage failures in a row, since the latest success
	seen      *Properties // the latest held state read
	termSeen  int64       // the highest term any read showed: a blob made again continues from it
	goneAt    time.Time   // when the blob, seen held before, was first found gone (zero: not gone)
	notified  string      // holder and term last passed to OnWait
	contended int         // acquires refused although a read said free
	reason    string      // Hold's latest answer
	// pauseReason: the latest read of the pause marker found the lease
	// paused (its text, see pauseText); "" if not (pausecheck.go).
	pauseReason  string
	pauseRefused bool // the marker's read was refused (warned once)
}

// errHeldNow: the acquire was refused because the lease is held.
var errHeldNow = errors.New("lease: held (acquire refused)")

// errGoneNow: the blob is gone, but a holder was seen: not created yet.
var errGoneNow = errors.New("lease: blob gone under a holder (not created yet)")

// run is the attempt: one optimistic acquire, then poll reads until one
// finds the lease free, an acquire then, and so on until the lease is
// claimed or the attempt gives up.
func (a *attempt) run(ctx context.Context) (*Lease, error) {
	var free *Properties  // the latest poll read, which found the lease free
	read := a.w.ReadFirst // the first step is one optimistic acquire, or a read
	for {
		if read {
			var err error
			free, err = a.poll(ctx)
			if err != nil {
				return nil, err
			}
			if free == nil {
				continue
			}
		}
		if free != nil && !free.Exists && a.holderMayRun() {
			if err := a.giveUpOrWait(ctx, a.seen); err != nil {
				return nil, err
			}
			continue
		}
		if a.holding() {
			// No acquire now: give up, or poll (reads only) until Hold
			// lets go and a read finds the lease free.
			if err := a.giveUpOrWait(ctx, free); err != nil {
				return nil, err
			}
			read = true
			continue
		}
		// An optimistic acquire goes alone (its reads follow if it
		// succeeds, see try); a follower's acquire comes with the poll read
		// that found the lease free, after a read of the marker.
		var pr *inflight[*Properties]
		if read {
			paused, retry, err := a.checkPause(ctx)
			switch {
			case err != nil:
				return nil, err
			case retry:
				continue
			case paused:
				if err := a.giveUpOrWait(ctx, free); err != nil {
					return nil, err
				}
				continue
			}
			pr = answered(free)
		}
		l, err := a.try(ctx, pr)
		read = true
		if err == nil {
			return l, nil
		}
		retry, err := a.settle(ctx, err)
		if err != nil {
			return nil, err
		}
		if retry {
			read = false // retry the acquire
		}
	}
}

// settle decides what follows an acquire that did not claim the lease
// (err, not nil): poll again (retry false, nil), send the acquire again
// after a failure's backoff (retry true), or give up (an error).
func (a *attempt) settle(ctx context.Context, err error) (retry bool, _ error) {
	switch {
	case ctx.Err() != nil:
		return false, ctx.Err()
	case errors.Is(err, errPausedNow):
		// The optimistic acquire found the lease paused and gave it
		// back unclaimed: from now on, poll.
		a.succeeded()
		return false, a.giveUpOrWait(ctx, a.seen)
	case errors.Is(err, errGoneNow):
		a.succeeded()
		return false, a.giveUpOrWait(ctx, a.seen)
	case errors.Is(err, errHeldNow) && a.w.NoWait && a.w.HeldIsEnough:
		return false, &HeldError{}
	case errors.Is(err, errHeldNow):
		a.succeeded()
		a.contended++
		if a.contended > 1 {
			// A read said free, the acquire said held: do not spin.
			return false, a.giveUpOrWait(ctx, a.seen)
		}
		return false, nil
	}
	var se *StorageError
	if !errors.As(err, &se) {
		return false, err // *SkipError
	}
	return true, a.failed(ctx, se)
}

// giveUpOrWait is what a contender kept from acquiring does: with NoWait or
// past the timeout it gives up (a *HeldError naming p's holder, the latest
// read), otherwise it waits one poll interval (nil) or until ctx ends.
func (a *attempt) giveUpOrWait(ctx context.Context, p *Properties) error {
	if a.w.NoWait || a.expired() {
		return a.heldError(p)
	}
	return a.pollWait(ctx)
}

// poll is one poll of a waiting follower (or the read of a contender
// whose optimistic acquire was refused): one read. It returns the read if
// it found the lease free; nil to poll again (after a failure's backoff, or
// a poll interval while the lease is held); an error to give up with.
func (a *attempt) poll(ctx context.Context) (*Properties, error) {
	rctx, cancel := a.requestCtx(ctx)
	p, err := a.b.getProperties(rctx)
	cancel()
	if err != nil {
		return nil, a.failed(ctx, err)
	}
	a.succeeded()
	a.termSeen = max(a.termSeen, p.Term)
	if p.Exists {
		a.goneAt = time.Time{}
	}
	if err := a.pollCheck(p); err != nil {
		return nil, err // once.go: --once, or another --slots recorded
	}
	// A run started within the window skips, whether the lease is still
	// held by it or already free again (the claim checks once more).
	if withinWindow(p, a.w.OncePer) && !a.ownClaim(p) {
		return nil, skipError(p, a.w.OncePer)
	}
	// Scheduled: an occurrence already started, none due, or one missed
	// skips, held or free; a due one held by an earlier run waits or
	// gives up as held (the claim decides once more).
	if p.Exists && !a.ownClaim(p) {
		if _, err := a.due(p, p.Date); err != nil {
			return nil, err
		}
	}
	if !p.State.Held() {
		return p, nil
	}
	a.contended = 0
	a.seen = p
	if a.w.NoWait || a.expired() {
		return nil, a.heldError(p)
	}
	a.notify(p)
	return nil, a.pollWait(ctx)
}

// try sends one acquire (creating the container and blob if missing) and,
// if it succeeds, claims the term: see claim. pr, when not nil, is the poll
// read that found the lease free, which the claim uses instead of a read of
// its own if the blob has not changed since. When nil (the optimistic
// acquire), the blob and its pause marker are read once the acquire has
// succeeded, together: the lease is given back unclaimed (errPausedNow) if
// the marker says paused, or if its read failed.
//
// A claim that failed for a reason that may be transient keeps the lease
// (unsure): the write may have landed unanswered, and the next try
// re-acquires with the same lease ID and finds its own nonce (claim.go).
func (a *attempt) try(ctx context.Context, pr *inflight[*Properties]) (*Lease, error) {
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
			// Someone else holds it: not with our lease ID, which every
			// acquire of this attempt proposes, so none of ours landed
			// unseen either (a lease of ours being broken is the one
			// refusal that does not say so).
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
		pr = sendAlong(ctx, a, a.b.getProperties)
		pause := a.startPauseRead(ctx)
		err := a.pausedAfterAcquire(pause)
		pause.abandon()
		if err != nil {
			pr.abandon()
			a.releaseQuietly(ctx)
			return nil, err
		}
	}
	defer pr.abandon()
	l := newLease(b, cfg, a.leaseID, sent, ans.Date)
	if err := a.claim(ctx, l, reusable(pr, ans, rtt)); err != nil {
		if se := asStorageError(err); se == nil || !se.Transient() || !l.stopAt().After(time.Now()) {
			a.releaseQuietly(ctx)
		}
		return nil, err
	}
	a.unsure = false
	a.e.log.Debug("acquired lease", "url", b.url, "term", l.Term, "identity", cfg.Identity)
	return l, nil
}

// releaseQuietly releases a lease this attempt will not hand over, from a
// fresh bounded context (ctx may be done). If it fails, cleanup tries again.
func (a *attempt) releaseQuietly(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	_, err := a.b.api.releaseLease(rctx, a.leaseID)
	if se := asStorageError(err); se == nil || se.leaseGone() {
		a.unsure = false
		return
	}
	a.e.log.Debug("release after a failed claim failed", "error", err)
}

// cleanup releases a lease that this attempt may hold unseen.
func (a *attempt) cleanup(ctx context.Context) {
	if a.unsure {
		a.releaseQuietly(ctx)
	}
}

// acquire sends one Acquire Lease, after OnTry; sent is when (t_ok if it
// succeeds).
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

// holding asks Hold whether to hold off the acquire about to be sent, and
// tells OnHold (waiting only) when the reason appears or changes.
func (a *attempt) holding() bool {
	if a.w.Hold == nil {
		return false
	}
	return a.heldBack(&a.reason, a.w.Hold())
}

// heldBack records reason (a hold's or a pause's; "" for none) in *last
// and, waiting, tells OnHold when it appears or changes. It reports whether
// the acquire is held back.
func (a *attempt) heldBack(last *string, reason string) bool {
	changed := reason != *last
	*last = reason
	if reason == "" {
		return false
	}
	if changed {
		a.e.log.Debug("holding off the acquire", "reason", reason)
		if a.w.OnHold != nil && !a.w.NoWait {
			a.w.OnHold(reason)
		}
	}
	return true
}

// heldError is the *HeldError to give up with: p's holder (the latest read;
// nil if none) and Hold's latest reason.
func (a *attempt) heldError(p *Properties) *HeldError {
	he := heldError(p)
	he.Reason = cmp.Or(a.reason, a.pauseReason)
	return he
}

// notify tells OnWait when the wait starts and when the holder changes.
func (a *attempt) notify(p *Properties) {
	key := p.Holder + "\x00" + strconv.FormatInt(p.Term, 10)
	if key == a.notified {
		return
	}
	a.notified = key
	a.e.log.Debug("waiting for the lease", "holder", p.Holder, "term", p.Term, "state", p.State)
	if a.w.OnWait != nil {
		a.w.OnWait(p)
	}
}
