package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/chaos"
	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
	"github.com/leaderrun/leaderrun/lease"
)

// handoverCase is one leaderrun row of figure 2: the flags every
// leaderrun of the row gets, and the poll of whoever takes over: the
// deputy's, or a follower's when there is no deputy.
type handoverCase struct {
	label  string
	flags  []string
	poll   time.Duration
	deputy bool // the successor stands by as the deputy before the SIGTERM
}

// handoverCases are figure 2's leaderrun rows: the default flags, where the
// follower stands by as the deputy, then followers at each of polls
// without a deputy, as before the deputy.
func handoverCases(polls []time.Duration) []handoverCase {
	cs := []handoverCase{{label: "leaderrun, default flags (the deputy reads every " + lease.DefaultDeputyPoll.String() + ")",
		poll: lease.DefaultDeputyPoll, deputy: true}}
	for _, p := range polls {
		cs = append(cs, handoverCase{label: "leaderrun --poll-interval " + p.String() + " --deputy-poll-interval 0",
			flags: []string{"--poll-interval", p.String(), "--deputy-poll-interval", "0"}, poll: p})
	}
	return cs
}

// handoverResult is figure 2 for one case (or for etcd): the time from the
// SIGTERM sent to the leader until the successor's child began.
type handoverResult struct {
	label  string
	poll   time.Duration // the successor's poll; 0 for etcd
	deputy bool          // the successor was the deputy
	etcd   bool
	d      sample
	// leaderrun's handover in three parts, from the proxies' clocks: the
	// leader stops (SIGTERM → its release request), the follower's poll
	// wait (→ its read that finds the lease free: the last read before its
	// acquire), and the take-over (→ its command's first record).
	stop, wait, takeover sample
	overlap              chaos.Overlap
	err                  string
}

// beginOf is when owner's first process began, from the records.
func beginOf(rec *chaos.Records, owner string) (time.Time, bool) {
	for _, p := range rec.Procs() {
		if p.Owner == owner {
			return p.Begin, true
		}
	}
	return time.Time{}, false
}

// childOf is owner's child process, from the records.
func childOf(rec *chaos.Records, owner string) (chaos.Proc, bool) {
	for _, p := range rec.Procs() {
		if p.Owner == owner && p.Role == "child" {
			return p, true
		}
	}
	return chaos.Proc{}, false
}

// awaitChild polls the records until owner's child has begun, the process
// that should start it has exited, ctx ends or d passes.
func awaitChild(ctx context.Context, rec *chaos.Records, owner string, p *testenv.Process, d time.Duration) (time.Time, error) {
	var at time.Time
	ok := waitFor(ctx, d, func() bool {
		if err := rec.Poll(); err != nil {
			return true
		}
		var seen bool
		at, seen = beginOf(rec, owner)
		return seen || p.Exited()
	})
	if err := rec.Poll(); err != nil {
		return at, err
	}
	switch {
	case !at.IsZero():
		return at, nil
	case p.Exited():
		return at, fmt.Errorf("%s exited (status %d) before its child began%s", owner, p.ExitCode(), testenv.LogTail(p.Log))
	case !ok && ctx.Err() != nil:
		return at, fmt.Errorf("interrupted")
	}
	return at, fmt.Errorf("%s's child did not begin within %s%s", owner, d, testenv.LogTail(p.Log))
}

// handoverLeaderrun measures graceful handovers of one case. A leader runs
// the chaos child; a follower is started and waits ("waiting for the
// lease" in its log; with the deputy, "standing by as the deputy"); after a
// random part of its poll interval (so that the SIGTERM falls at a
// uniformly random phase of its polling) the leader gets SIGTERM, forwards
// it to its child, which ends, records the run's end and releases the
// lease. The follower's next read finds the lease free, it acquires and
// starts its child. The follower then leads the next round.
//
// Long on purpose: one round is a sequence of steps over the same two
// processes and timestamps, read best top to bottom.
func (b *bench) handoverLeaderrun(ctx context.Context, hc handoverCase) handoverResult {
	poll := hc.poll
	r := handoverResult{label: hc.label, poll: poll, deputy: hc.deputy}
	name := "handover-" + testenv.RandHex(4)
	dir := filepath.Join(b.work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.err = err.Error()
		return r
	}
	recPath := filepath.Join(dir, "records")
	rec := chaos.NewRecords(recPath)
	// Every leaderrun talks through its own counting proxy, whose clock
	// times its requests.
	var clocks []*opClock
	defer func() {
		for _, c := range clocks {
			c.close()
			_ = c.p.Close()
		}
	}()
	start := func(i int) (*testenv.Process, string, *opClock, error) {
		id := fmt.Sprintf("h%02d", i)
		px, err := faultproxy.New(b.az.Target)
		if err != nil {
			return nil, id, nil, err
		}
		px.Set(faultproxy.Mode{Latency: b.o.hoRTT})
		clock := clockOps(px)
		clocks = append(clocks, clock)
		env, flags := b.viaProxy(px)
		flags = append(append(flags, "--identity", id, "--kill-grace", "5s"), hc.flags...)
		p, err := b.launch(id, filepath.Join(dir, id+".log"), env, b.lr(name, flags, b.bin.child, "-log", recPath))
		return p, id, clock, err
	}

	leader, id, leaderClock, err := start(0)
	if err != nil {
		r.err = err.Error()
		return r
	}
	if _, err := awaitChild(ctx, rec, id, leader, 20*time.Second); err != nil {
		r.err = err.Error()
		leader.Stop(10 * time.Second)
		return r
	}
	for i := 1; i <= b.o.handovers && r.err == ""; i++ {
		follower, fid, followerClock, err := start(i)
		if err != nil {
			r.err = err.Error()
			break
		}
		settled := "waiting for the lease"
		if hc.deputy {
			settled = "standing by as the deputy"
		}
		waiting := waitFor(ctx, 15*time.Second, func() bool {
			return testenv.LogHas(follower.Log, settled) || follower.Exited()
		})
		if !waiting || follower.Exited() {
			r.err = fmt.Sprintf("%s did not settle into waiting%s", fid, testenv.LogTail(follower.Log))
			follower.Stop(10 * time.Second)
			break
		}
		if !testenv.SleepCtx(ctx, rand.N(poll+poll/5)) {
			r.err = "interrupted"
			follower.Stop(10 * time.Second)
			break
		}
		t0 := time.Now()
		leader.Signal(syscall.SIGTERM)
		at, err := awaitChild(ctx, rec, fid, follower, 3*poll+20*time.Second)
		if err != nil {
			r.err = err.Error()
			follower.Stop(10 * time.Second)
			break
		}
		r.d = append(r.d, at.Sub(t0))
		if !leader.Wait(15 * time.Second) {
			r.err = "the old leader did not exit within 15 s of its SIGTERM" + testenv.LogTail(leader.Log)
			leader.Stop(time.Second)
		}
		testenv.SleepCtx(ctx, 5*time.Millisecond) // the clocks' last ticks
		rel, ok1 := leaderClock.firstAfter(faultproxy.OpRelease, t0)
		acq, ok2 := followerClock.firstAfter(faultproxy.OpAcquire, rel)
		read, ok3 := followerClock.lastBefore(faultproxy.OpGetProperties, acq)
		if ok1 && ok2 && ok3 && !read.Before(rel) {
			r.stop = append(r.stop, rel.Sub(t0))
			r.wait = append(r.wait, read.Sub(rel))
			r.takeover = append(r.takeover, at.Sub(read))
		}
		leaderClock.close()
		leader, leaderClock = follower, followerClock
	}
	leader.Stop(10 * time.Second)
	if err := rec.Poll(); err == nil {
		r.overlap = chaos.MaxOverlap(rec.Procs())
	}
	b.reapChildren(rec)
	return r
}

// handoverEtcd measures the same with `etcdctl lock`: the leader's process
// group (etcdctl and its command, as systemd's default KillMode would) gets
// SIGTERM; the command ends, etcdctl revokes its session, and the waiting
// etcdctl, told by a watch, takes the lock and starts its command.
// etcdctl 3.4 alone does not pass SIGTERM on: its command would run to its
// end.
func (b *bench) handoverEtcd(ctx context.Context) handoverResult {
	r := handoverResult{label: "etcdctl lock (watch)", etcd: true}
	if b.etcd == nil {
		r.err = b.etcdWhy
		return r
	}
	dir := filepath.Join(b.work, "handover-etcd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.err = err.Error()
		return r
	}
	recPath := filepath.Join(dir, "records")
	rec := chaos.NewRecords(recPath)
	name := "handover-" + testenv.RandHex(4)
	start := func(i int) (*testenv.Process, string, error) {
		id := fmt.Sprintf("e%02d", i)
		p, err := b.launch(id, filepath.Join(dir, id+".log"), b.etcd.env("LEADERRUN_IDENTITY="+id),
			b.etcd.lockArgv(name, 0, b.bin.child, "-log", recPath))
		return p, id, err
	}
	leader, id, err := start(0)
	if err != nil {
		r.err = err.Error()
		return r
	}
	if _, err := awaitChild(ctx, rec, id, leader, 20*time.Second); err != nil {
		r.err = err.Error()
		leader.Stop(5 * time.Second)
		return r
	}
	for i := 1; i <= b.o.handovers && r.err == ""; i++ {
		follower, fid, err := start(i)
		if err != nil {
			r.err = err.Error()
			break
		}
		// etcdctl says nothing while it waits: give it time to connect and
		// queue its lock request.
		if !testenv.SleepCtx(ctx, 300*time.Millisecond+rand.N(200*time.Millisecond)) {
			r.err = "interrupted"
			follower.SignalGroup(syscall.SIGKILL)
			break
		}
		if _, ran := beginOf(rec, fid); ran || follower.Exited() {
			r.err = fmt.Sprintf("%s did not wait for the lock%s", fid, testenv.LogTail(follower.Log))
			follower.SignalGroup(syscall.SIGKILL)
			break
		}
		t0 := time.Now()
		leader.SignalGroup(syscall.SIGTERM)
		at, err := awaitChild(ctx, rec, fid, follower, 20*time.Second)
		if err != nil {
			r.err = err.Error()
			follower.SignalGroup(syscall.SIGKILL)
			break
		}
		r.d = append(r.d, at.Sub(t0))
		if !leader.Wait(10 * time.Second) {
			leader.SignalGroup(syscall.SIGKILL)
			leader.Wait(5 * time.Second)
		}
		leader = follower
	}
	leader.SignalGroup(syscall.SIGTERM)
	if !leader.Wait(10 * time.Second) {
		leader.SignalGroup(syscall.SIGKILL)
		leader.Wait(5 * time.Second)
	}
	if err := rec.Poll(); err == nil {
		r.overlap = chaos.MaxOverlap(rec.Procs())
	}
	b.reapChildren(rec)
	return r
}

// reapChildren kills, by pid, any chaos child of the records still running
// (none should be).
func (b *bench) reapChildren(rec *chaos.Records) {
	_ = rec.Poll()
	exe := absPath(b.bin.child)
	for _, p := range rec.Procs() {
		killPID(p.PID, exe)
	}
}
