package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/chaos"
	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// failoverResult is figure 3: kill -9 of the leader.
type failoverResult struct {
	// leaderrun (default 15 s lease): at the default flags, where the
	// successor is the deputy, and without a deputy (a follower at the
	// default 2 s poll).
	rows []failoverRow
	// etcdctl lock --ttl 15: the same, and whether the crashed leader's
	// command was still running when the new holder's began.
	etcdFailover sample
	etcdOrphans  int // commands still running at the new holder's start
	etcdTrials   int
	etcdErr      string
	err          string
}

// failoverRow is one leaderrun row of figure 3: from the kill to the
// successor's child's begin; from the leader's last successful renewal (as
// seen by its proxy) to the same; how long the crashed leader's child was
// still running after the kill.
type failoverRow struct {
	label                            string
	failover, sinceRenewal, survival sample
	trials                           int
	errs                             []string
}

// failoverCases are figure 3's leaderrun rows: the successor's flags, and
// whether it stands by as the deputy.
var failoverCases = []struct {
	label  string
	flags  []string
	deputy bool
}{
	{"leaderrun (15 s lease), default flags: the deputy reads every 250ms", nil, true},
	{"leaderrun (15 s lease), --deputy-poll-interval 0: a follower at the default 2 s poll", []string{"--deputy-poll-interval", "0"}, false},
}

const (
	leaseDuration = 15 * time.Second
	defaultPoll   = 2 * time.Second
	etcdTTL       = 15
)

func (b *bench) failover(ctx context.Context) *failoverResult {
	r := &failoverResult{}
	dir := filepath.Join(b.work, "failover")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.err = err.Error()
		return r
	}
	type one struct {
		failover, sinceRenewal, survival time.Duration
		orphan                           bool
		etcd                             bool
		row                              int // failoverCases
		err                              error
	}
	var mu sync.Mutex
	var all []one
	var wg sync.WaitGroup
	for c := range failoverCases {
		n := b.o.failovers
		if c > 0 {
			n = max(b.o.failovers/2, 1) // the comparison
		}
		for i := range n {
			wg.Go(func() {
				f, s, v, err := b.failoverLeaderrun(ctx, dir, c, i)
				mu.Lock()
				all = append(all, one{failover: f, sinceRenewal: s, survival: v, row: c, err: err})
				mu.Unlock()
			})
		}
	}
	etcdTrials := 0
	if b.etcd != nil {
		etcdTrials = max(b.o.failovers/3, 1)
	} else {
		r.etcdErr = b.etcdWhy
	}
	for i := range etcdTrials {
		wg.Go(func() {
			f, orphan, err := b.failoverEtcd(ctx, dir, i)
			mu.Lock()
			all = append(all, one{failover: f, orphan: orphan, etcd: true, err: err})
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, c := range failoverCases {
		r.rows = append(r.rows, failoverRow{label: c.label})
	}
	for _, o := range all {
		row := &r.rows[o.row]
		switch {
		case o.etcd && o.err != nil:
			r.etcdErr = o.err.Error()
		case o.etcd:
			r.etcdTrials++
			r.etcdFailover = append(r.etcdFailover, o.failover)
			if o.orphan {
				r.etcdOrphans++
			}
		case o.err != nil:
			row.errs = append(row.errs, o.err.Error())
		default:
			row.trials++
			row.failover = append(row.failover, o.failover)
			row.sinceRenewal = append(row.sinceRenewal, o.sinceRenewal)
			row.survival = append(row.survival, o.survival)
		}
	}
	for _, row := range r.rows {
		if row.trials == 0 && len(row.errs) > 0 && r.err == "" {
			r.err = row.errs[0]
		}
	}
	return r
}

// renewWatch remembers when a proxy last saw an acquire or renew request
// (polled every 2 ms): an upper bound of the crashed leader's t_ok.
type renewWatch struct {
	once sync.Once
	mu   sync.Mutex
	n    int64
	last time.Time
	stop chan struct{}
	done chan struct{}
}

func watchRenewals(p *faultproxy.Proxy) *renewWatch {
	w := &renewWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				c := p.Counts()
				n := c.ByOp[faultproxy.OpAcquire] + c.ByOp[faultproxy.OpRenew]
				w.mu.Lock()
				if n != w.n {
					w.n, w.last = n, time.Now()
				}
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// lastAt stops the watch and returns when the count last grew.
func (w *renewWatch) lastAt() time.Time {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// failoverLeaderrun is one crash trial of failoverCases[c]: a leader
// (through its own counting proxy) runs the chaos child, beating every
// 5 ms; a follower waits with the case's flags (as the deputy, at the
// default flags); after a random 0.5–5.5 s (a random phase of the 5 s
// renewals) the leader gets SIGKILL. The crashed leader's child is watched
// every millisecond until it is gone; the follower's child's begin ends the
// trial.
func (b *bench) failoverLeaderrun(ctx context.Context, dir string, c, i int) (failover, sinceRenewal, survival time.Duration, err error) {
	fc := failoverCases[c]
	i += 100 * c // the trial's files and identities
	recPath := filepath.Join(dir, fmt.Sprintf("records-%d", i))
	rec := chaos.NewRecords(recPath)
	name := "failover-" + testenv.RandHex(4)
	p, err := faultproxy.New(b.az.Target)
	if err != nil {
		return 0, 0, 0, err
	}
	defer p.Close()
	watch := watchRenewals(p)
	lid, fid := fmt.Sprintf("crash%d-leader", i), fmt.Sprintf("crash%d-follower", i)
	env, flags := b.viaProxy(p)
	leader, err := b.launch(lid, filepath.Join(dir, lid+".log"), env,
		b.lr(name, append(flags, "--identity", lid), b.bin.child, "-log", recPath, "-beat", "5ms"))
	if err != nil {
		watch.lastAt()
		return 0, 0, 0, err
	}
	defer leader.Stop(5 * time.Second)
	if _, err := awaitChild(ctx, rec, lid, leader, 30*time.Second); err != nil {
		watch.lastAt()
		return 0, 0, 0, err
	}
	follower, err := b.launch(fid, filepath.Join(dir, fid+".log"), b.direct(),
		b.lr(name, append([]string{"--identity", fid}, fc.flags...), b.bin.child, "-log", recPath))
	if err != nil {
		watch.lastAt()
		return 0, 0, 0, err
	}
	defer func() {
		follower.Stop(10 * time.Second)
		b.reapChildren(rec)
	}()
	settled := "waiting for the lease"
	if fc.deputy {
		settled = "standing by as the deputy"
	}
	if !waitFor(ctx, 15*time.Second, func() bool { return testenv.LogHas(follower.Log, settled) || follower.Exited() }) || follower.Exited() {
		watch.lastAt()
		return 0, 0, 0, fmt.Errorf("%s did not settle into waiting%s", fid, testenv.LogTail(follower.Log))
	}
	if !testenv.SleepCtx(ctx, 500*time.Millisecond+rand.N(5*time.Second)) {
		watch.lastAt()
		return 0, 0, 0, fmt.Errorf("interrupted")
	}
	_ = rec.Poll()
	child, ok := childOf(rec, lid)
	if !ok {
		watch.lastAt()
		return 0, 0, 0, fmt.Errorf("no record of %s's child", lid)
	}
	exe := absPath(b.bin.child)
	t0 := time.Now()
	leader.Signal(syscall.SIGKILL)
	lastRenewal := watch.lastAt()
	// Watch the child die: every millisecond, up to 5 s.
	for testenv.RunningExe(child.PID, exe) && time.Since(t0) < 5*time.Second {
		time.Sleep(time.Millisecond)
	}
	survival = time.Since(t0)
	if testenv.RunningExe(child.PID, exe) {
		killPID(child.PID, exe)
		return 0, 0, 0, fmt.Errorf("the crashed leader's child was still running 5 s after kill -9")
	}
	at, err := awaitChild(ctx, rec, fid, follower, leaseDuration+3*defaultPoll+15*time.Second)
	if err != nil {
		return 0, 0, 0, err
	}
	return at.Sub(t0), at.Sub(lastRenewal), survival, nil
}

// failoverEtcd is one crash trial of `etcdctl lock --ttl 15`: kill -9 of
// the leading etcdctl. Its command has no parent-death signal: it runs on,
// unlocked, and the bench kills it once the new holder's command began.
func (b *bench) failoverEtcd(ctx context.Context, dir string, i int) (failover time.Duration, orphan bool, err error) {
	recPath := filepath.Join(dir, fmt.Sprintf("records-etcd-%d", i))
	rec := chaos.NewRecords(recPath)
	name := "failover-" + testenv.RandHex(4)
	lid, fid := fmt.Sprintf("etcd%d-leader", i), fmt.Sprintf("etcd%d-follower", i)
	leader, err := b.launch(lid, filepath.Join(dir, lid+".log"), b.etcd.env("LEADERRUN_IDENTITY="+lid),
		b.etcd.lockArgv(name, etcdTTL, b.bin.child, "-log", recPath))
	if err != nil {
		return 0, false, err
	}
	exe := absPath(b.bin.child)
	defer func() {
		leader.SignalGroup(syscall.SIGKILL)
		b.reapChildren(rec)
	}()
	if _, err := awaitChild(ctx, rec, lid, leader, 20*time.Second); err != nil {
		return 0, false, err
	}
	follower, err := b.launch(fid, filepath.Join(dir, fid+".log"), b.etcd.env("LEADERRUN_IDENTITY="+fid),
		b.etcd.lockArgv(name, etcdTTL, b.bin.child, "-log", recPath))
	if err != nil {
		return 0, false, err
	}
	defer func() {
		follower.SignalGroup(syscall.SIGTERM)
		if !follower.Wait(10 * time.Second) {
			follower.SignalGroup(syscall.SIGKILL)
		}
	}()
	if !testenv.SleepCtx(ctx, 500*time.Millisecond+rand.N(5*time.Second)) {
		return 0, false, fmt.Errorf("interrupted")
	}
	_ = rec.Poll()
	child, ok := childOf(rec, lid)
	if !ok {
		return 0, false, fmt.Errorf("no record of %s's command", lid)
	}
	t0 := time.Now()
	leader.Signal(syscall.SIGKILL)
	at, err := awaitChild(ctx, rec, fid, follower, time.Duration(etcdTTL)*time.Second+20*time.Second)
	if err != nil {
		return 0, false, err
	}
	orphan = testenv.RunningExe(child.PID, exe)
	killPID(child.PID, exe)
	return at.Sub(t0), orphan, nil
}
