// keeper.go: the keeper, which renews a held Lease and closes Lost when the
// lease can no longer be trusted (the safety rule in the package
// documentation), with the deadlines it enforces.

package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Lost is closed by the keeper when leadership is lost: no renewal
// succeeded in time, or the service said the lease is gone. It is final.
// It is never closed after Release was called.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// LostErr says why and when to stop the child; nil until Lost is closed.
func (l *Lease) LostErr() *LostError {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// RenewedAt receives the time of each successful renewal when the receiver
// keeps up (sends never block; a slow receiver misses values). For the
// systemd watchdog.
func (l *Lease) RenewedAt() <-chan time.Time { return l.renewedAt }

// KillBy is the current kill deadline, t_ok + Duration − 1.5 s: the moment
// by which the child must be dead if no renewal succeeds from now on. It
// moves forward with every successful renewal, never back.
func (l *Lease) KillBy() time.Time {
	_, killAt := l.deadlines()
	return killAt
}

// Keep starts the keeper, which renews the lease every RenewInterval and
// enforces the safety rule (see the package documentation), and returns at
// once. Calling it again does nothing.
//
// Each renewal request carries a deadline that ends before StopAt: a third
// of the time between a scheduled renewal and StopAt, from 1 s to 3 s
// (1.17 s for the default 15 s lease); failures other than "the lease is gone" are retried with backoff
// (200 ms doubling to 2 s, jittered) until StopAt. Lost then closes with
// StopAt = t_ok + Duration − 1.5 s − StopBudget and KillBy = t_ok + Duration
// − 1.5 s. A renewal answered 409, 412 or 404 closes Lost at once, with
// StopAt = now and KillBy = min(t_ok + Duration − 1.5 s, now + StopBudget).
// On waking after the process was frozen past KillBy, StopAt = KillBy = now.
//
// ctx must outlive the child: when it ends, renewals stop and Lost closes at
// once, because nothing keeps the lease any more. Release stops the keeper
// without closing Lost.
func (l *Lease) Keep(ctx context.Context) {
	l.keepOnce.Do(func() {
		kctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		l.mu.Lock()
		if l.releasing {
			l.mu.Unlock()
			cancel()
			return
		}
		l.stopKeeper, l.keeperDone = cancel, done
		l.mu.Unlock()
		go l.keep(kctx, done)
	})
}

// keep is the keeper loop. It checks the deadlines against time.Now() on
// every wake, so that a timer that fired late (a frozen process) cannot
// hide a passed deadline.
func (l *Lease) keep(ctx context.Context, done chan struct{}) {
	defer close(done)
	var (
		lastErr  *StorageError
		failures failureRun
	)
	l.mu.Lock()
	next := l.tOK.Add(l.renewInterval)
	l.mu.Unlock()
	for {
		now := time.Now()
		stopAt, killAt := l.deadlines()
		switch {
		case !now.Before(killAt):
			l.lose(now, now, deadlineLoss(lastErr, true))
			return
		case !now.Before(stopAt):
			l.lose(stopAt, killAt, deadlineLoss(lastErr, false))
			return
		}
		if now.Before(next) {
			if waitFor(ctx.Done(), time.Until(minTime(next, stopAt))) {
				l.stopped(ctx)
				return
			}
			continue
		}

		sent := time.Now()
		rctx, cancel := context.WithDeadline(ctx, minTime(sent.Add(l.renewTry()), stopAt))
		ans, err := l.b.api.renewLease(rctx, l.ID)
		cancel()
		if err == nil {
			l.renewed(sent, ans.Date)
			failures.reset()
			lastErr = nil
			next = sent.Add(l.renewInterval)
			continue
		}
		if ctx.Err() != nil {
			l.stopped(ctx)
			return
		}
		se := asStorageError(err)
		if se.leaseGone() {
			l.loseNow(&LostError{Reason: fmt.Errorf("the service says the lease is gone: %w", se), Cause: lostCause(se), Last: se})
			return
		}
		lastErr = se
		delay := failures.add(sent, l.dice)
		next = time.Now().Add(delay)
		l.log.Warn("lease renewal failed", "error", se, "attempt", failures.n,
			"stop_in", time.Until(stopAt).Round(time.Millisecond), "retry_in", delay.Round(time.Millisecond))
	}
}

// renewed moves t_ok forward to the renewal's send time (never beyond it:
// the answer may come late, the lease counts from the request).
func (l *Lease) renewed(sent, date time.Time) {
	l.mu.Lock()
	if sent.After(l.tOK) {
		l.tOK = sent
	}
	if !date.IsZero() {
		l.date, l.dateAt = date, time.Now()
	}
	l.mu.Unlock()
	l.sawDateSent(date, sent)
	l.log.Trace("renewed lease", "term", l.Term)
	select {
	case l.renewedAt <- time.Now():
	default:
	}
}

// stopped handles the keeper's ctx ending: quietly for Release, as a loss
// otherwise.
func (l *Lease) stopped(ctx context.Context) {
	l.mu.Lock()
	releasing := l.releasing
	l.mu.Unlock()
	if releasing {
		return
	}
	l.loseNow(&LostError{Reason: fmt.Errorf("the keeper was stopped, nothing renews the lease: %w", context.Cause(ctx)),
		Cause: LostStopped})
}

// loseNow closes Lost for a lease gone now: the stop signal at once, and
// SIGKILL after the stop budget at the latest, never after the current kill
// deadline (nor before now).
func (l *Lease) loseNow(why *LostError) {
	now := time.Now()
	_, killAt := l.deadlines()
	l.lose(now, maxTime(now, minTime(killAt, now.Add(l.StopBudget))), why)
}

// lose closes Lost, once, with why's reason and cause, and the deadlines.
// The run's one line names the cause; this one is for debugging.
func (l *Lease) lose(stopAt, killBy time.Time, why *LostError) {
	l.mu.Lock()
	if l.lostErr != nil {
		l.mu.Unlock()
		return
	}
	why.StopAt, why.KillBy, why.Unrenewed = stopAt, killBy, max(stopAt.Sub(l.tOK), 0)
	l.lostErr = why
	l.mu.Unlock()
	close(l.lost)
	l.log.Debug("lease lost", "reason", why.Reason, "term", l.Term,
		"stop_in", time.Until(stopAt).Round(time.Millisecond), "kill_in", time.Until(killBy).Round(time.Millisecond))
}

// deadlineLoss says why a deadline passed without a renewal: last is the
// latest renewal's failure (nil: none failed since the last success),
// frozen that the kill deadline passed too.
func deadlineLoss(last *StorageError, frozen bool) *LostError {
	switch {
	case frozen && last == nil:
		return &LostError{Reason: errors.New("the renewal deadline passed without a renewal attempt (was the process frozen?)"),
			Cause: LostUnrenewed}
	case last == nil:
		return &LostError{Reason: errors.New("no renewal succeeded before the stop deadline"), Cause: LostUnrenewed}
	}
	return &LostError{Reason: fmt.Errorf("no renewal succeeded before the stop deadline: %w", last), Cause: LostRenewals, Last: last}
}

// deadlines returns, for the current t_ok, when the stop signal must go
// (stopAt) and when SIGKILL must go (killAt).
func (l *Lease) deadlines() (stopAt, killAt time.Time) {
	l.mu.Lock()
	tOK := l.tOK
	l.mu.Unlock()
	killAt = tOK.Add(l.Duration - killMargin)
	return killAt.Add(-l.StopBudget), killAt
}

func (l *Lease) stopAt() time.Time { s, _ := l.deadlines(); return s }

// StopAt is the current stop deadline, KillBy − StopBudget: the child must
// be asked to stop by then if no renewal succeeds from now on. A child is
// never started at or after it.
func (l *Lease) StopAt() time.Time { return l.stopAt() }

// A renew request is bounded by a third of the time between a scheduled
// renewal and the stop deadline, within these limits, so that a request
// that hangs leaves room for at least two more tries (1.17 s for the
// default 15 s lease).
const (
	minRenewTry = 1 * time.Second
	maxRenewTry = 3 * time.Second
)

// renewTry bounds one renew request: see renewTiming.
func (l *Lease) renewTry() time.Duration {
	_, try := renewTiming(l.Duration, l.StopBudget, l.renewInterval)
	return try
}

// renewTiming is the window between a scheduled renewal and the stop
// deadline, and the bound of one renew try: a third of the window, kept
// within minRenewTry and maxRenewTry.
func renewTiming(duration, stopBudget, renewInterval time.Duration) (window, try time.Duration) {
	window = duration - killMargin - stopBudget - renewInterval
	return window, min(max(window/3, minRenewTry), maxRenewTry)
}
