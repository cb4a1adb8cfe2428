package cmd

// Waiting for the lease: the acquire, what a waiting follower reports, and
// a terminating signal that ends the wait.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/lease"
)

// splay waits a random time in [0, d) before the first request, so that a
// fleet whose clocks start it in the same second spreads out. It reports
// false if ctx ended first (a terminating signal).
func splay(ctx context.Context, a *app, d time.Duration) bool {
	wait := rand.N(d)
	a.log.Debug("splay: waiting before the first request", "wait", wait)
	return !waitOrDone(ctx, wait)
}

// waitOrDone waits d, or less if ctx ends first, and reports whether ctx
// ended.
func waitOrDone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}

// waitForLease acquires the lease; a terminating signal ends the wait at
// once. It returns a nil lease when --once-per skips the run. While a
// scheduled event concerns this VM (--scheduled-events) it does not acquire.
func waitForLease(ctx context.Context, a *app, o *runOptions, e *lease.Elector, sd *notifier, sigs <-chan os.Signal, hs *headStart, events *eventWatch) (*lease.Lease, error) {
	log := a.log
	waitCtx, cancelWait := context.WithCancel(ctx)
	var waitSig syscall.Signal
	waitDone := make(chan struct{})
	go func() {
		defer close(waitDone)
		for {
			select {
			case s := <-sigs:
				if terminating(s) {
					waitSig = s.(syscall.Signal)
					cancelWait()
					return
				}
				log.Debug("signal ignored while waiting", "signal", s)
			case <-waitCtx.Done():
				return
			}
		}
	}()
	if o.splay > 0 && !splay(waitCtx, a, o.splay) {
		cancelWait()
		<-waitDone
		if waitSig == 0 {
			return nil, ctx.Err()
		}
		return nil, exitWith(exitSignalBase+int(waitSig), fmt.Errorf("%s during --splay; nothing ran, nothing is held", signalName(waitSig)))
	}
	l, err := e.Acquire(waitCtx, lease.WaitOptions{
		NoWait: o.noWait,
		// --no-wait -E 0 -q: held and skipped end alike and silently, so a
		// losing contender need not read who holds the lease.
		HeldIsEnough: o.noWait && o.conflictCode == exitOK && !log.IsInfo(),
		// After a splay the run of this tick has likely started: read first.
		// So does a scheduled invocation: most find nothing due.
		ReadFirst:      o.splay > 0 || o.sched.s != nil,
		Timeout:        o.timeout,
		StorageTimeout: o.storageTime,
		OncePer:        o.oncePer,
		Once:           o.slots.once,
		// --once-per-host: "" when off
		OncePerHost: o.slots.oncePerHostName(),
		Schedule:    o.sched.waitSchedule(),
		OnTry:       hs.prepare,
		OnWait: func(p *lease.Properties) {
			hs.discard()
			held := &lease.HeldError{Holder: p.Holder, Since: p.AcquiredAt, Term: p.Term, Stale: lease.StaleHolder(p)}
			log.Info("waiting for the lease", "lease", o.loc.lease, "holder", heldText(held, o.identity))
			sd.waiting()
			sd.status("waiting: held by " + heldText(held, o.identity))
		},
		// Held back by a scheduled event for this VM (events.go), or by a
		// pause (`leaderrun pause`, checked inside lease).
		Hold: events.holdFunc(),
		OnHold: func(reason string) {
			hs.discard()
			log.Info("waiting for the lease", "lease", o.loc.lease, "reason", reason)
			sd.waiting()
			sd.status("waiting: " + reason)
		},
	})
	cancelWait()
	<-waitDone
	var skip *lease.SkipError
	var held *lease.HeldError
	switch {
	case errors.As(err, &skip) && logScheduleSkip(log, &o.sched, skip):
		return nil, nil
	case o.sched.s != nil && errors.As(err, &held) && waitSig == 0:
		// An earlier run still holds the lease: quietly; the next
		// invocation tries again while the occurrence is due.
		log.Debug("the lease is held (an earlier run still going?): the next invocation tries again", "holder", held.Holder)
		return nil, nil
	case errors.As(err, &skip) && skip.Reason != lease.SkipOncePer:
		logSkip(log, skip) // slots.go
		return nil, nil
	case errors.As(err, &skip):
		log.Info("skipped: a run started within the --once-per window", "window", o.oncePer,
			"last_run_by", skip.Holder, "last_run_start", skip.Start.UTC().Format(time.RFC3339))
		return nil, nil
	case err != nil:
		return nil, acquireExit(err, waitSig, o)
	case waitSig != 0:
		// The signal came as the acquire succeeded: the wait ends as if it
		// had come a moment sooner, and the lease goes back unused.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		if rerr := l.ReleaseUnused(rctx); rerr != nil {
			log.Warn("could not release the lease; it expires by itself", "error", rerr)
		}
		return nil, exitWith(exitSignalBase+int(waitSig), fmt.Errorf("%s while acquiring lease %q; nothing ran, the lease was released", signalName(waitSig), o.loc.lease))
	}
	return l, nil
}
