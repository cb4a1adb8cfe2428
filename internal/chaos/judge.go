// Judging a trial: the measures computed from the records, and each
// scenario's expectations.

package chaos

import (
	"fmt"
	"syscall"
	"time"
)

// judge checks the scenario's expectations and computes the measures. It
// is long because it holds one short case per scenario, best read side by
// side.
func (t *trial) judge() {
	r := t.res
	r.Failures = append(r.Failures, t.failures...)
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	note := func(format string, args ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, args...)) }
	if t.stalled != "" {
		fail("%s", t.stalled)
	}
	r.Overlap = MaxOverlap(withoutFillers(r.Procs)) // slots.go: the fillers run on other slots
	if most := mostAtOnce(r.Procs); r.Kind.Safety() && most > max(r.Slots, 1) {
		fail("%d children at once on a lease of %d slot(s)", most, max(r.Slots, 1))
	}
	r.MaxBeatGap = maxGap(r.Procs)
	hg, hok := GroupOf(r.Procs, holderID)
	fg, fok := GroupOf(r.Procs, followerID)
	if !hok {
		fail("the holder's child never ran")
		return
	}
	// The holder's group is over once its leaderrun ended before teardown
	// (leaderrun waits for the group; after kill -9 the guard kills it).
	gone := r.HolderExit.During
	if gone && !r.FaultAt.IsZero() {
		r.ChildAfterFault = span(hg.End.Sub(r.FaultAt))
		if !r.LastRenewal.IsZero() {
			r.AfterLastRenewal = span(hg.End.Sub(r.LastRenewal))
		}
	}
	if fok && !r.FaultAt.IsZero() {
		r.Failover = span(fg.Begin.Sub(r.FaultAt))
	}
	if fok && gone {
		r.Gap = span(fg.Begin.Sub(hg.End))
	}
	if gone && !r.WakeAt.IsZero() {
		r.WakeToKill = span(hg.End.Sub(r.WakeAt))
	}
	if fok && fg.Term <= hg.Term {
		r.TermReset = true
		if r.Kind != StorageLoss {
			fail("the term did not grow: follower term %d after holder term %d", fg.Term, hg.Term)
		}
	}
	if r.Kind.Safety() && r.Overlap.D > 0 {
		fail("overlap: %s", r.Overlap)
	}

	expectLost := func() {
		if !r.HolderExit.During || r.HolderExit.Code != exitLost {
			fail("holder exit %s, want %d (leadership lost)", r.HolderExit, exitLost)
		}
	}
	expectTakeover := func() {
		if !fok {
			fail("the follower's child never began")
		}
	}
	switch r.Kind {
	case BlackHole, Reset, FlakyLong, Stubborn:
		expectLost()
		expectTakeover()
		// LastRenewal ≥ t_ok, so AfterLastRenewal is at most the real
		// time the group outlived t_ok: above 14 s is a certain breach.
		if s := r.AfterLastRenewal; s.OK && s.D > DeadBy {
			fail("the holder's group ran %s after the last renewal it could have had: the rule is %s", s, fmtDur(DeadBy))
		}
		if r.Kind == Stubborn && hg.Ended {
			note("the stubborn group wrote end records: it did not ignore SIGTERM as staged")
		}
	case Break:
		expectLost()
		expectTakeover()
		if s := r.ChildAfterFault; s.OK && s.D > RenewInterval+2*time.Second {
			fail("the holder's group ran %s after the break: it must stop at the next renewal (every %s)", s, fmtDur(RenewInterval))
		}
	case FlakyShort:
		if r.HolderExit.During || r.HolderExit.Code == exitLost {
			fail("leadership was not kept: the holder exited %s during a short fault", r.HolderExit)
		}
		for _, p := range r.Procs {
			if p.Owner == holderID && p.End.Before(r.TeardownAt.Add(-200*time.Millisecond)) {
				fail("the holder's %s (pid %d) stopped %s before the trial ended", p.Role, p.PID, fmtDur(r.TeardownAt.Sub(p.End)))
			}
		}
		if fok {
			fail("the follower's child ran during a short fault (began %s after the fault)", r.Failover)
		}
		if r.RenewFailures == 0 && r.Params.Mode.ErrorRate >= 1 {
			note("no renewal failed: the fault missed the renewal it was aligned to")
		}
	case Kill9:
		if r.HolderExit.Signal != syscall.SIGKILL {
			note("holder exit %s, expected SIGKILL", r.HolderExit)
		}
		expectTakeover()
		if s := r.ChildAfterFault; s.OK && s.D > time.Second {
			fail("the holder's group ran %s after kill -9 of leaderrun: it must die at once", s)
		}
	case Freeze:
		expectLost()
		expectTakeover()
		if s := r.AfterLastRenewal; s.OK && s.D > DeadBy {
			fail("the holder's group ran %s after the last renewal while leaderrun was frozen: the guard must kill it by %s", s, fmtDur(DeadBy))
		}
	case StorageLoss:
		if !gone || !hg.End.Before(r.TeardownAt) {
			fail("the holder's child was not killed (holder exit %s)", r.HolderExit)
		}
		if r.Kind == StorageLoss {
			if s := r.ChildAfterFault; s.OK && s.D > RenewInterval+2*time.Second {
				note("the holder's group ran %s after the %s was deleted: it should stop at the next renewal", s, r.Params.Delete)
			}
			if r.TermReset {
				note("term reset: the follower's term %d is not above the holder's %d (the new blob starts again)", fg.Term, hg.Term)
			}
		}
		if r.Overlap.D > 0 {
			note("residual window: %s", r.Overlap)
		}
	}
	if r.MaxBeatGap > 250*time.Millisecond {
		note("a heartbeat gap of %s: the machine was loaded, ends are known to that precision", fmtDur(r.MaxBeatGap))
	}
}
