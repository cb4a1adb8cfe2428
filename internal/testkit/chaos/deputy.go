package chaos

// The deputy scenario (Deputy): a graceful handover whose deputy is killed,
// frozen or cut off around it. Three leaderrun processes share the lease:
// the holder (behind its fault proxy, as in every scenario); the deputy,
// the first follower, behind a fault proxy of its own, which takes the
// deputy's place; and a follower that talks to the storage directly. Both
// followers run at leaderrun's defaults (a 2 s poll, a 250 ms deputy
// poll). The holder gets SIGTERM; Around before or after it, the deputy is
// killed (kill -9), frozen (SIGSTOP for Length) or cut off (a black hole
// or resets for Length): while it stands by, as it finds the lease free,
// as it acquires and claims, or once its child runs. Whoever takes over,
// the deputy or the follower, two children may never run at once, and one
// of them must take over.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// deputyID is the deputy's identity.
const deputyID = "deputy"

// The deputy's faults.
var deputyFaults = []string{"kill9", "freeze", "partition"}

const (
	// deputySettle: a deputy that took over before its fault ended keeps
	// its lease, or loses it by the rule, within a lease duration of the
	// fault's end; its child still running then led on by right.
	deputySettle = 17 * time.Second
	// deputyWait bounds the wait for the end after the fault's end: a
	// lease to expire, a poll, and the machine's load.
	deputyWait = 45 * time.Second
	// liveWithin: a group whose last record is this recent still runs
	// (its children beat every 20 ms).
	liveWithin = 250 * time.Millisecond
)

// randomDeputy draws the deputy's fault: when, relative to the holder's
// SIGTERM (mostly within the half second in which the deputy finds the
// lease free, acquires, claims and starts its child), which one, and how
// long a freeze or a cut lasts (shorter and longer than the lease).
func randomDeputy(rng *rand.Rand, between func(lo, hi time.Duration) time.Duration) Params {
	p := Params{Warmup: between(500*time.Millisecond, 3*time.Second), Grandchildren: 1}
	p.Deputy = deputyFaults[rng.IntN(len(deputyFaults))]
	p.Around = between(-500*time.Millisecond, 700*time.Millisecond)
	switch p.Deputy {
	case "freeze":
		p.Length = between(time.Second, 25*time.Second)
	case "partition":
		p.Mode = faultproxy.Mode{BlackHole: true}
		if rng.IntN(2) == 0 {
			p.Mode = faultproxy.Mode{Reset: true}
		}
		p.Length = between(2*time.Second, 20*time.Second)
	}
	return p
}

// deputyArgs are the deputy's: the first follower, through its own proxy.
func (t *trial) deputyArgs() []string {
	return []string{"-l", t.res.Lease, "--container", t.res.Container,
		"--endpoint", t.deputyProxy.URL() + t.env.storage.AccountPath, "--identity", deputyID, "--log-level", "debug",
		"--", t.env.Child, "-log", t.rec.path}
}

// startDeputy starts the deputy and waits until it stands by as the
// deputy (its log says so).
func (t *trial) startDeputy(ctx context.Context) error {
	var err error
	if t.deputyProxy, err = faultproxy.New(t.env.storage.Target); err != nil {
		return err
	}
	env := append(testenv.BaseEnv(), "AZURE_STORAGE_ACCOUNT="+t.env.storage.Account, "AZURE_STORAGE_KEY="+t.env.storage.Key)
	if t.deputy, err = t.launch(deputyID, env, t.deputyArgs()); err != nil {
		return err
	}
	standing := func() bool { return testenv.LogHas(t.deputy.Log, "standing by as the deputy") }
	if _, err := t.waitFor(ctx, time.Now().Add(followerSettle), func() bool { return standing() || t.deputy.Exited() }); err != nil {
		return err
	}
	if !standing() {
		return fmt.Errorf("the deputy did not stand by (deputy: %s)%s", exitOf(t.deputy, true), testenv.LogTail(t.deputy.Log))
	}
	return nil
}

// injectDeputy sends the holder SIGTERM and faults the deputy Around it.
// FaultAt is the SIGTERM: the handover's start.
func (t *trial) injectDeputy(ctx context.Context) error {
	r, p := t.res, t.res.Params
	stop := func() error {
		r.LastRenewal = t.ops.lastBefore(t.proxy.Counts(), time.Now())
		r.FaultAt = time.Now()
		return t.holder.Signal(syscall.SIGTERM)
	}
	if p.Around < 0 {
		t.faultDeputy()
		if !testenv.SleepCtx(ctx, -p.Around) {
			return ctx.Err()
		}
		return stop()
	}
	if err := stop(); err != nil {
		return err
	}
	if !testenv.SleepCtx(ctx, p.Around) {
		return ctx.Err()
	}
	t.faultDeputy()
	return nil
}

// faultDeputy starts the deputy's fault, and sets DeputyFaultAt and when
// it ends.
func (t *trial) faultDeputy() {
	r, p := t.res, t.res.Params
	r.DeputyFaultAt = time.Now()
	t.deputyFaultEnd = r.DeputyFaultAt
	switch p.Deputy {
	case "kill9":
		_ = t.deputy.Signal(syscall.SIGKILL)
	case "freeze":
		_ = t.deputy.Signal(syscall.SIGSTOP)
		t.deputyFrozen.Store(true)
		t.deputyFaultEnd = r.DeputyFaultAt.Add(p.Length)
		t.deputyThaw = time.AfterFunc(p.Length, func() {
			if t.deputyFrozen.CompareAndSwap(true, false) {
				_ = t.deputy.Signal(syscall.SIGCONT)
			}
		})
	case "partition":
		t.deputyProxy.Set(p.Mode)
		t.deputyFaultEnd = r.DeputyFaultAt.Add(p.Length)
		t.deputyThaw = time.AfterFunc(p.Length, func() { t.deputyProxy.Set(faultproxy.Mode{}) })
	}
}

// awaitDeputyEnd waits until the holder has exited, the deputy's fault is
// over, and a successor's child runs that no longer depends on the fault:
// the follower's, or the deputy's begun after the fault (or running still
// deputySettle after it). Not reaching it is a product failure (stalled).
func (t *trial) awaitDeputyEnd(ctx context.Context) error {
	live := func(procs []Proc, owner string) (Group, bool) {
		g, ok := GroupOf(procs, owner)
		return g, ok && !g.Ended && time.Since(g.End) < liveWithin
	}
	done := func() bool {
		if !t.holder.Exited() || time.Now().Before(t.deputyFaultEnd) {
			return false
		}
		procs := t.rec.Procs()
		if _, ok := live(procs, followerID); ok {
			return true
		}
		g, ok := live(procs, deputyID)
		return ok && (g.Begin.After(t.deputyFaultEnd) || time.Since(t.deputyFaultEnd) > deputySettle)
	}
	met, err := t.waitFor(ctx, t.deputyFaultEnd.Add(deputyWait), done)
	if err != nil || met {
		return err
	}
	var missing []string
	if !t.holder.Exited() {
		missing = append(missing, "the holder had not exited")
	}
	if !t.rec.has(deputyID) && !t.rec.has(followerID) {
		missing = append(missing, "no successor's child had begun")
	} else {
		missing = append(missing, "no successor's child ran")
	}
	t.stalled = fmt.Sprintf("%s after the holder's SIGTERM: %s", fmtDur(time.Since(t.res.FaultAt)), strings.Join(missing, ", "))
	return nil
}

// endDeputyFault ends the deputy's fault, if it lasts (teardown).
func (t *trial) endDeputyFault() {
	if t.deputyThaw != nil {
		t.deputyThaw.Stop()
	}
	if t.deputyFrozen.CompareAndSwap(true, false) {
		_ = t.deputy.Signal(syscall.SIGCONT)
	}
	if t.deputyProxy != nil {
		t.deputyProxy.Set(faultproxy.Mode{})
	}
}

// successor is the first of the deputy's and the follower's groups to
// begin: the holder's successor.
func successor(procs []Proc) (Group, bool) {
	d, dok := GroupOf(procs, deputyID)
	f, fok := GroupOf(procs, followerID)
	switch {
	case dok && (!fok || d.Begin.Before(f.Begin)):
		return d, true
	case fok:
		return f, true
	}
	return Group{}, false
}

// judgeDeputy: the holder ended by its stop request, not a lost lease; a
// successor took over (the first one's begin is the failover); both
// successors' terms grew; the overlaps of all three are judged for every
// scenario.
func (t *trial) judgeDeputy(hg, sg Group, sok bool) {
	r := t.res
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	note := func(format string, args ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, args...)) }
	if !r.HolderExit.During || r.HolderExit.Code == exitLost {
		fail("holder exit %s, want the command's end after the stop request", r.HolderExit)
	}
	if !sok {
		fail("neither the deputy's nor the follower's child ever began")
		return
	}
	r.Successor = sg.Owner
	if d, ok := GroupOf(r.Procs, deputyID); ok {
		if f, ok := GroupOf(r.Procs, followerID); ok {
			note("both led: the %s first, then the %s (term %d, then %d)", sg.Owner, map[string]string{deputyID: followerID, followerID: deputyID}[sg.Owner],
				min(d.Term, f.Term), max(d.Term, f.Term))
			if d.Term == f.Term {
				fail("the deputy and the follower ran under one term, %d", d.Term)
			}
		}
	}
}

// deputyState is the deputy's part of a trial.
type deputyState struct {
	deputy         *testenv.Process
	deputyProxy    *faultproxy.Proxy
	deputyThaw     *time.Timer
	deputyFrozen   atomic.Bool
	deputyFaultEnd time.Time
}
