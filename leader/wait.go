package leader

// Waiting for the lease: the acquire, what a waiting follower reports, and
// a terminating signal that ends the wait.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
)

// splay waits a random time in [0, d) before the first request, so that a
// fleet whose clocks start it in the same second spreads out. It reports
// false if ctx ended first (a terminating signal).
func (inv *invocation) splay(ctx context.Context, d time.Duration) bool {
	wait := rand.N(d)
	inv.log.Debug("splay: waiting before the first request", "wait", wait)
	select {
	case <-ctx.Done():
		return false
	case <-time.After(wait):
		return true
	}
}

// forLease acquires the lease; a terminating signal ends the wait at once.
// It returns a nil lease when the run is skipped (--once-per, --once,
// --once-per-host, --schedule). While a scheduled event concerns this VM
// (--scheduled-events) it does not acquire.
func (inv *invocation) forLease(ctx context.Context) (*lease.Lease, error) {
	log, o, sd, hs, name := inv.log, inv.o, inv.sd, inv.hs, inv.o.Client.Name()
	waitCtx, cancelWait := context.WithCancel(ctx)
	var waitSig syscall.Signal
	waitDone := make(chan struct{})
	go func() {
		defer close(waitDone)
		for {
			select {
			case s := <-inv.sigs:
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
	// waiting reports a wait (held, or held back) until the next try.
	waiting := func(status, key, value string) {
		hs.discard()
		log.Info("waiting for the lease", "lease", name, key, value)
		sd.waiting()
		sd.status("waiting: " + status)
	}
	if o.Splay > 0 && !inv.splay(waitCtx, o.Splay) {
		cancelWait()
		<-waitDone
		if waitSig == 0 {
			return nil, ctx.Err()
		}
		return nil, exit.With(exit.SignalBase+int(waitSig), fmt.Errorf("%s during --splay; nothing ran, nothing is held", signalName(waitSig)))
	}
	l, err := inv.elector.Acquire(waitCtx, lease.WaitOptions{
		NoWait: o.NoWait,
		// --no-wait -E 0 -q: held and skipped end alike and silently, so a
		// losing contender need not read who holds the lease.
		HeldIsEnough: o.NoWait && o.ConflictCode == exit.OK && !log.IsInfo(),
		// After a splay the run of this tick has likely started: read first.
		// So does a scheduled invocation: most find nothing due.
		ReadFirst:      o.Splay > 0 || o.Schedule != nil,
		Timeout:        o.Timeout,
		StorageTimeout: o.StorageTimeout,
		OncePer:        o.OncePer,
		Once:           o.Once,
		OncePerHost:    o.OncePerHost,
		Schedule:       o.leaseSchedule(),
		OnTry:          hs.prepare,
		OnWait: func(p *lease.Properties) {
			held := heldText(&lease.HeldError{Holder: p.Holder, Since: p.AcquiredAt, Term: p.Term, Stale: lease.StaleHolder(p)}, o.Lease.Identity)
			waiting("held by "+held, "holder", held)
		},
		// Held back by a scheduled event for this VM (events.go), or by a
		// pause (`leaderrun pause`, checked inside lease).
		Hold:   holdFunc(inv.events),
		OnHold: func(reason string) { waiting(reason, "reason", reason) },
	})
	cancelWait()
	<-waitDone
	var skip *lease.SkipError
	var held *lease.HeldError
	switch {
	case errors.As(err, &skip):
		logSkip(log, o, skip)
		return nil, nil
	case o.Schedule != nil && errors.As(err, &held) && waitSig == 0:
		// An earlier run still holds the lease: quietly; the next
		// invocation tries again while the occurrence is due.
		log.Debug("the lease is held (an earlier run still going?): the next invocation tries again", "holder", held.Holder)
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
		return nil, exit.With(exit.SignalBase+int(waitSig), fmt.Errorf("%s while acquiring lease %q; nothing ran, the lease was released", signalName(waitSig), name))
	}
	return l, nil
}
