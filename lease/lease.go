package lease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Lease is a held lease: the term it began, and the keeper that renews it.
//
// Use: Acquire → Keep → RecordRunStart → start the child → watch Lost →
// (child exits) → RecordRunEnd → Release. If Lost closes, stop the child by
// LostErr().StopAt and SIGKILL it by LostErr().KillBy, then Release.
type Lease struct {
	ID         string        // the lease ID held (LEADERRUN_LEASE_ID)
	Term       int64         // the fencing token (LEADERRUN_TERM): grows at every acquisition
	Name       string        // the blob name (LEADERRUN_LEASE)
	URL        string        // the blob URL, no query (LEADERRUN_LEASE_URL)
	Identity   string        // this holder (LEADERRUN_IDENTITY)
	AcquiredAt time.Time     // when the term began, by the service's clock
	Duration   time.Duration // the lease duration
	StopBudget time.Duration // min(KillGrace, Duration/3)

	c             *Client
	renewInterval time.Duration
	log           hclog.Logger

	lost      chan struct{}
	renewedAt chan time.Time
	keepOnce  sync.Once

	mu      sync.Mutex
	tOK     time.Time         // send time of the last successful acquire or renew (monotonic)
	lostErr *LostError        // set before lost is closed
	meta    map[string]string // the blob's metadata as last written by us
	// runStartRecorded: the claim wrote lastrunstart with the term, so the
	// first RecordRunStart has nothing to do.
	runStartRecorded bool
	date             time.Time // the latest service Date seen
	dateAt           time.Time // when that answer arrived (monotonic)
	stopKeeper       context.CancelFunc
	keeperDone       chan struct{}
	releasing        bool // Release was called: the keeper exits without closing Lost
	released         bool
}

func newLease(c *Client, cfg Config, id string, sent, date time.Time) *Lease {
	l := &Lease{
		ID: id, Name: c.blobName, URL: c.url, Identity: cfg.Identity,
		AcquiredAt: date, Duration: cfg.Duration, StopBudget: cfg.StopBudget(),
		c: c, renewInterval: cfg.RenewInterval, log: cfg.Logger.Named("lease"),
		lost: make(chan struct{}), renewedAt: make(chan time.Time, 1),
		tOK: sent, meta: map[string]string{},
	}
	l.sawDate(date)
	return l
}

// deadlines returns, for the current t_ok, when the stop signal must go
// (stopAt) and when SIGKILL must go (killAt).
func (l *Lease) deadlines() (stopAt, killAt time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadlinesLocked()
}

func (l *Lease) deadlinesLocked() (stopAt, killAt time.Time) {
	killAt = l.tOK.Add(l.Duration - killMargin)
	return killAt.Add(-l.StopBudget), killAt
}

// renewTry bounds one renew request: a third of the window between a
// scheduled renewal and the stop deadline, kept within minRenewTry and
// maxRenewTry.
func (l *Lease) renewTry() time.Duration {
	window := l.Duration - killMargin - l.StopBudget - l.renewInterval
	return min(max(window/3, minRenewTry), maxRenewTry)
}

func (l *Lease) stopAt() time.Time { s, _ := l.deadlines(); return s }

// sawDate records a service Date and when it arrived.
func (l *Lease) sawDate(d time.Time) {
	if d.IsZero() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.date, l.dateAt = d, time.Now()
}

// serviceNow is the service's time now: the Date of the latest answer plus
// the monotonic time elapsed since it arrived, to the second. It never reads
// the local wall clock. Zero if no Date was seen.
func (l *Lease) serviceNow() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.date.IsZero() {
		return time.Time{}
	}
	return l.date.Add(time.Since(l.dateAt)).UTC().Truncate(time.Second)
}

// RecordRunStart writes lastrunstart and lastrunholder to the blob's
// metadata, and clears lastrunend and lastexit; call it right before the
// child starts. Right after Acquire it writes nothing: the claim recorded
// the start with the term (service time: the later of the acquire's Date
// and that of the read the claim used). Otherwise lastrunstart is service
// time too: the Date header of the latest answer from the service (the
// acquire's metadata write or the latest renewal) plus the monotonic time
// since it arrived, to the second (Date has one-second resolution).
// Transient failures are retried for up to 5 s. Under --once-per the record
// is what makes later contenders skip, so a failure should stop the run.
func (l *Lease) RecordRunStart(ctx context.Context) error {
	if l.runStartRecorded {
		// The claim wrote it with the term, a moment ago.
		l.runStartRecorded = false
		return nil
	}
	start := l.serviceNow()
	if start.IsZero() {
		return &StorageError{Op: "record run start", Err: errors.New("no Date header seen from the service"),
			kind: kindPermanent, summary: "no service time"}
	}
	return l.updateMetadata(ctx, "record run start", func(md map[string]string) {
		md[mdLastRunStart] = formatTime(start)
		md[mdLastRunHolder] = l.Identity
		delete(md, mdLastRunEnd)
		delete(md, mdLastExit)
	})
}

// RecordRunEnd writes lastrunend (service time, as for RecordRunStart) and
// lastexit. It needs the lease: call it before Release. After Lost it
// usually fails (the lease is gone), which is worth a warning, not more.
func (l *Lease) RecordRunEnd(ctx context.Context, exitCode int) error {
	end := l.serviceNow()
	return l.updateMetadata(ctx, "record run end", func(md map[string]string) {
		if !end.IsZero() {
			md[mdLastRunEnd] = formatTime(end)
		}
		md[mdLastExit] = strconv.Itoa(exitCode)
	})
}

// updateMetadata writes the metadata changed by edit, with the lease ID,
// retrying transient failures within requestTimeout.
func (l *Lease) updateMetadata(ctx context.Context, op string, edit func(map[string]string)) error {
	l.mu.Lock()
	md := maps.Clone(l.meta)
	l.mu.Unlock()
	edit(md)
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	for n := 1; ; n++ {
		date, err := l.c.setMetadata(rctx, l.ID, "", md)
		if err == nil {
			l.sawDate(date)
			l.mu.Lock()
			l.meta = md
			l.mu.Unlock()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		se := asStorageError(err)
		se.Op = op
		if !se.Transient() || rctx.Err() != nil {
			return se
		}
		t := time.NewTimer(backoff(n))
		select {
		case <-rctx.Done():
			t.Stop()
			return se
		case <-t.C:
		}
	}
}

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
	var lastErr *StorageError
	failures := 0
	l.mu.Lock()
	next := l.tOK.Add(l.renewInterval)
	l.mu.Unlock()
	for {
		now := time.Now()
		stopAt, killAt := l.deadlines()
		switch {
		case !now.Before(killAt):
			l.lose(now, now, deadlineReason(lastErr, true))
			return
		case !now.Before(stopAt):
			l.lose(stopAt, killAt, deadlineReason(lastErr, false))
			return
		}
		if now.Before(next) {
			if !sleepUntil(ctx, minTime(next, stopAt)) {
				l.stopped(ctx)
				return
			}
			continue
		}

		sent := time.Now()
		rctx, cancel := context.WithDeadline(ctx, minTime(sent.Add(l.renewTry()), stopAt))
		date, err := l.c.renew(rctx, l.ID)
		cancel()
		if err == nil {
			l.renewed(sent, date)
			failures, lastErr = 0, nil
			next = sent.Add(l.renewInterval)
			continue
		}
		if ctx.Err() != nil {
			l.stopped(ctx)
			return
		}
		se := asStorageError(err)
		if se.leaseGone() {
			now := time.Now()
			_, killAt := l.deadlines()
			l.lose(now, maxTime(now, minTime(killAt, now.Add(l.StopBudget))), fmt.Errorf("the service says the lease is gone: %w", se))
			return
		}
		failures++
		lastErr = se
		delay := backoff(failures)
		next = time.Now().Add(delay)
		l.log.Warn("lease renewal failed", "error", se, "attempt", failures,
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
	now := time.Now()
	_, killAt := l.deadlines()
	l.lose(now, maxTime(now, minTime(killAt, now.Add(l.StopBudget))),
		fmt.Errorf("the keeper was stopped, nothing renews the lease: %w", context.Cause(ctx)))
}

// lose closes Lost, once.
func (l *Lease) lose(stopAt, killBy time.Time, reason error) {
	l.mu.Lock()
	if l.lostErr != nil {
		l.mu.Unlock()
		return
	}
	l.lostErr = &LostError{Reason: reason, StopAt: stopAt, KillBy: killBy}
	l.mu.Unlock()
	close(l.lost)
	l.log.Warn("lease lost", "reason", reason, "term", l.Term,
		"stop_in", time.Until(stopAt).Round(time.Millisecond), "kill_in", time.Until(killBy).Round(time.Millisecond))
}

func deadlineReason(last *StorageError, frozen bool) error {
	switch {
	case frozen && last == nil:
		return errors.New("the renewal deadline passed without a renewal attempt (was the process frozen?)")
	case last == nil:
		return errors.New("no renewal succeeded before the stop deadline")
	}
	return fmt.Errorf("no renewal succeeded before the stop deadline: %w", last)
}

// sleepUntil waits until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// Release stops the keeper, then releases the lease with a fresh context of
// at most 5 s (ctx's values are kept, its cancellation is not), retrying
// transient failures. Call it after the child has exited, never before. It is
// safe after Lost (a lease already gone is not an error) and more than once.
// If it fails, the lease expires by itself within Duration.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil
	}
	l.released, l.releasing = true, true
	stop, done := l.stopKeeper, l.keeperDone
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	for n := 1; ; n++ {
		err := l.c.release(rctx, l.ID)
		se := asStorageError(err)
		switch {
		case err == nil:
			l.log.Debug("released lease", "term", l.Term)
			return nil
		case se.leaseGone():
			l.log.Debug("lease already gone at release", "code", se.Code)
			return nil
		case !se.Transient() || rctx.Err() != nil:
			return se
		}
		t := time.NewTimer(backoff(n))
		select {
		case <-rctx.Done():
			t.Stop()
			return se
		case <-t.C:
		}
	}
}
