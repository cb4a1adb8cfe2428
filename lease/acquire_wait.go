// acquire_wait.go: how one Acquire call waits and bounds its requests: each
// request's deadline, the failure budget, the poll interval, a blob gone
// under a holder, a holder or Hold that keeps it waiting, OnWait and OnHold.

package lease

import (
	"cmp"
	"context"
	"strconv"
	"time"
)

// holderMayRun: the blob (or container) is gone. A follower that saw it held
// does not create it again until the lease duration it last saw has passed
// since it first found it gone: that holder learns of the loss at its next
// renewal and stops its child within its lease (the safety rule).
func (a *attempt) holderMayRun() bool {
	if a.seen == nil {
		return false
	}
	d := a.seen.LeaseDuration
	if d <= 0 {
		d = MaxDuration
	}
	if a.goneAt.IsZero() {
		a.goneAt = time.Now()
		a.e.log.Info("the lease blob is gone under its holder: waiting out its lease before creating it again",
			"holder", a.seen.Holder, "term", a.seen.Term, "wait", d)
	}
	return time.Since(a.goneAt) < d
}

// requestCtx bounds one request (requestDeadline), noting when it was sent.
func (a *attempt) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	a.reqStart = time.Now()
	return context.WithDeadline(ctx, a.requestDeadline())
}

// requestDeadline: requestTimeout from now, or the wait's deadline if ahead.
func (a *attempt) requestDeadline() time.Time {
	now := time.Now()
	d := now.Add(requestTimeout)
	if !a.deadline.IsZero() && a.deadline.After(now) {
		d = minTime(d, a.deadline)
	}
	return d
}

// failed records a storage failure: the error to give up with, or nil after
// a full-jitter backoff. The budget for failures in a row is Timeout's
// deadline, else StorageTimeout: a throttled fleet keeps trying, spread out.
// Retries log at debug only; one that outlasts the budget, by the caller.
func (a *attempt) failed(ctx context.Context, err error) error {
	se := asStorageError(err)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case se == nil:
		return err
	case !se.Transient():
		return se
	}
	a.failures.count(a.reqStart)
	if a.expired() && a.seen != nil {
		return a.heldError(a.seen) // the wait is over; the last thing known is a holder
	}
	if a.expired() || (a.deadline.IsZero() && time.Since(a.failures.since) >= a.w.StorageTimeout) {
		return se
	}
	delay := fullJitter(a.failures.n)
	if a.deadline.IsZero() {
		delay = min(delay, time.Until(a.failures.since.Add(a.w.StorageTimeout)))
	}
	a.e.log.Debug("storage request failed, retrying", "error", se, "retry_in", delay)
	return a.sleep(ctx, delay)
}

func (a *attempt) succeeded() { a.failures.reset() }

func (a *attempt) expired() bool { return !a.deadline.IsZero() && !time.Now().Before(a.deadline) }

// pollWait sleeps one poll interval: PollInterval ±20 %.
func (a *attempt) pollWait(ctx context.Context) error {
	return a.sleep(ctx, jitter(a.e.cfg.PollInterval, 0.2))
}

// sleep waits d, or until the wait's deadline, or until ctx ends.
func (a *attempt) sleep(ctx context.Context, d time.Duration) error {
	if !a.deadline.IsZero() {
		d = min(d, time.Until(a.deadline))
	}
	if d > 0 && waitFor(ctx.Done(), d) {
		return ctx.Err()
	}
	return nil
}

// giveUpOrWait gives up with NoWait or past the timeout (a *HeldError
// naming p's holder), else waits one poll interval (nil).
func (a *attempt) giveUpOrWait(ctx context.Context, p *Properties) error {
	if a.w.NoWait || a.expired() {
		return a.heldError(p)
	}
	return a.pollWait(ctx)
}

// heldWait: a read showed the lease held by held (nil: none to name, the
// free slots taken since): give up, or tell OnWait and wait a poll interval.
func (a *attempt) heldWait(ctx context.Context, held *Properties) error {
	if held != nil {
		a.seen = held
	}
	if a.w.NoWait && a.ownClaim(held) && !a.expired() {
		// The holder found our claim (its answer lost, our lease lapsed)
		// and skips: wait, within the storage budget, for it to let go,
		// then adopt the claim. --no-wait does not wait for another's run,
		// but this run is ours.
		if a.ownHeldSince.IsZero() {
			a.ownHeldSince = time.Now()
		}
		if time.Since(a.ownHeldSince) < a.w.StorageTimeout {
			return a.pollWait(ctx)
		}
	}
	if a.w.NoWait || a.expired() {
		return a.heldError(a.seen)
	}
	if held != nil {
		a.notify(held)
	}
	return a.pollWait(ctx)
}

func (a *attempt) holding() bool {
	return a.w.Hold != nil && a.heldBack(&a.reason, a.w.Hold())
}

// heldBack notes reason (Hold's, a pause's; "" none) in *last, telling OnHold
// of a new one; it reports whether the acquire is held back.
func (a *attempt) heldBack(last *string, reason string) bool {
	changed := reason != *last
	*last = reason
	if reason != "" && changed {
		a.e.log.Debug("holding off the acquire", "reason", reason)
		if a.w.OnHold != nil && !a.w.NoWait {
			a.w.OnHold(reason)
		}
	}
	return reason != ""
}

// heldError names p's holder (nil: none) and Hold's or the pause's reason.
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
