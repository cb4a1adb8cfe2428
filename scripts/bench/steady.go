package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// steadyResult is figures 4 and 5: what a leader and waiting followers ask
// of the storage, and what they cost in memory and CPU, over one window.
type steadyResult struct {
	window time.Duration
	rows   []steadyRow
	err    string
}

// steadyFollowers are the waiting followers of figures 4 and 5, started in
// this order: the flags each gets, the log line that says it waits.
var steadyFollowers = []struct {
	label, settled string
	flags          []string
}{
	{"leaderrun, waiting, the deputy (default flags: reads the lease every 250ms)", "standing by as the deputy", nil},
	{"leaderrun, waiting, another follower (default flags: reads the lease every 2s, the deputy's place every 15s)", "waiting for the lease", nil},
	{"leaderrun, waiting, --poll-interval 2s --deputy-poll-interval 0 (no deputy)", "waiting for the lease",
		[]string{"--poll-interval", "2s", "--deputy-poll-interval", "0"}},
	{"leaderrun, waiting, --poll-interval 200ms --deputy-poll-interval 0", "waiting for the lease",
		[]string{"--poll-interval", "200ms", "--deputy-poll-interval", "0"}},
}

// steadyRow is one process of the window.
type steadyRow struct {
	label   string
	counts  *faultproxy.Counts // nil when its requests were not counted
	startup *faultproxy.Counts // what it asked before the window
	stat    procStat           // at the end of the window
	cpu     time.Duration      // CPU time spent during the window
	err     string
}

// sizes are the binaries' sizes, for figure 5.
type sizes struct {
	plain, stripped, etcdctl, flock int64
}

func measureSizes(bins binaries) sizes {
	size := func(path string) int64 {
		if st, err := os.Stat(path); err == nil {
			return st.Size()
		}
		return 0
	}
	s := sizes{plain: size(bins.leaderrun), stripped: size(bins.stripped)}
	if p, err := exec.LookPath("etcdctl"); err == nil {
		s.etcdctl = size(absPath(p))
	}
	if p, err := exec.LookPath("flock"); err == nil {
		s.flock = size(absPath(p))
	}
	return s
}

// watched is a process of the window and how its CPU is read.
type watched struct {
	label  string
	pid    func() (int, error)
	proxy  *faultproxy.Proxy
	cpu0   time.Duration
	start0 faultproxy.Counts
}

// steadyState measures figures 4 and 5 over one window. Long because the
// leader, the followers, their counters and the CPU samples share one
// timeline, best read top to bottom.
func (b *bench) steadyState(ctx context.Context) *steadyResult {
	r := &steadyResult{window: b.o.window}
	dir := filepath.Join(b.work, "steady")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.err = err.Error()
		return r
	}
	name := "steady-" + testenv.RandHex(4)
	hold := strconv.Itoa(int((b.o.window + 5*time.Minute) / time.Second)) // sleep's argument, bounded
	var ws []*watched
	var proxies []*faultproxy.Proxy
	var mine []*testenv.Process
	defer func() {
		// Processes first (a leader releases its lease through its proxy).
		for _, p := range mine {
			p.SignalGroup(syscall.SIGTERM)
		}
		for _, p := range mine {
			if !p.Wait(10 * time.Second) {
				p.SignalGroup(syscall.SIGKILL)
				p.Wait(5 * time.Second)
			}
		}
		for _, p := range proxies {
			_ = p.Close()
		}
	}()
	newProxy := func() (*faultproxy.Proxy, error) {
		p, err := faultproxy.New(b.az.Target)
		if err == nil {
			proxies = append(proxies, p)
		}
		return p, err
	}
	launch := func(name, log string, env, argv []string) (*testenv.Process, error) {
		p, err := b.launch(name, log, env, argv)
		if err == nil {
			mine = append(mine, p)
		}
		return p, err
	}

	// The leader, through its own proxy.
	pl, err := newProxy()
	if err != nil {
		r.err = err.Error()
		return r
	}
	env, flags := b.viaProxy(pl)
	leader, err := launch("steady-leader", filepath.Join(dir, "leader.log"), env,
		b.lr(name, append(flags, "--identity", "steady-leader"), "sleep", hold))
	if err != nil {
		r.err = err.Error()
		return r
	}
	// Its command runs once it has acquired and its guard is up.
	acquired := waitFor(ctx, 20*time.Second, func() bool {
		if leader.Exited() {
			return true
		}
		_, err := guardOf(leader.Pid())
		return testenv.LogHas(leader.Log, "acquired lease") && err == nil
	})
	if !acquired || leader.Exited() {
		r.err = "the steady-state leader did not start its command" + testenv.LogTail(leader.Log)
		return r
	}
	ws = append(ws, &watched{label: "leaderrun, leading (default 15 s lease, renewals every 5 s)", pid: func() (int, error) { return leader.Pid(), nil }, proxy: pl})
	ws = append(ws, &watched{label: "its guard (leaderrun re-executed, leads the command's group)", pid: func() (int, error) { return guardOf(leader.Pid()) }})

	// Followers, each through its own proxy: the first at the default
	// flags takes the deputy's place, the second finds it taken; then
	// followers without a deputy, as before the deputy.
	for i, fc := range steadyFollowers {
		pf, err := newProxy()
		if err != nil {
			r.err = err.Error()
			return r
		}
		env, flags := b.viaProxy(pf)
		id := fmt.Sprintf("steady-follower-%d", i)
		f, err := launch(id, filepath.Join(dir, id+".log"), env,
			b.lr(name, append(append(flags, "--identity", id), fc.flags...), "sleep", hold))
		if err != nil {
			r.err = err.Error()
			return r
		}
		if !waitFor(ctx, 15*time.Second, func() bool { return testenv.LogHas(f.Log, fc.settled) || f.Exited() }) || f.Exited() {
			r.err = id + " did not settle into waiting" + testenv.LogTail(f.Log)
			return r
		}
		ws = append(ws, &watched{label: fc.label, pid: func() (int, error) { return f.Pid(), nil }, proxy: pf})
		if i == 0 {
			ws = append(ws, &watched{label: "its guard, ready (the deputy's command's, started while it stands by)", pid: func() (int, error) { return guardOf(f.Pid()) }})
		}
	}

	// What a user would pick instead, holding and waiting alike.
	lockFile := filepath.Join(dir, "flock.lock")
	fh, err := launch("flock-holder", filepath.Join(dir, "flock.log"), testenv.BaseEnv(), []string{"flock", lockFile, "sleep", hold})
	if err == nil {
		time.Sleep(100 * time.Millisecond)
		fw, err := launch("flock-waiter", filepath.Join(dir, "flock.log"), testenv.BaseEnv(), []string{"flock", lockFile, "sleep", hold})
		if err == nil {
			ws = append(ws, &watched{label: "flock, holding", pid: func() (int, error) { return fh.Pid(), nil }},
				&watched{label: "flock, waiting", pid: func() (int, error) { return fw.Pid(), nil }})
		}
	}
	if b.etcd != nil {
		eh, err := launch("etcd-holder", filepath.Join(dir, "etcd.log"), b.etcd.env(), b.etcd.lockArgv(name, 0, "sleep", hold))
		if err == nil {
			time.Sleep(300 * time.Millisecond)
			ew, err := launch("etcd-waiter", filepath.Join(dir, "etcd.log"), b.etcd.env(), b.etcd.lockArgv(name, 0, "sleep", hold))
			if err == nil {
				ws = append(ws, &watched{label: "etcdctl lock, holding", pid: func() (int, error) { return eh.Pid(), nil }},
					&watched{label: "etcdctl lock, waiting", pid: func() (int, error) { return ew.Pid(), nil }})
			}
		}
	}
	testenv.SleepCtx(ctx, 500*time.Millisecond)

	// The window.
	for _, w := range ws {
		if pid, err := w.pid(); err == nil {
			w.cpu0 = cpuPrecise(pid, b.tick)
		}
		if w.proxy != nil {
			w.start0 = w.proxy.Counts()
			w.proxy.ResetCounts()
		}
	}
	if !testenv.SleepCtx(ctx, b.o.window) {
		r.err = "interrupted"
		return r
	}
	for _, w := range ws {
		row := steadyRow{label: w.label}
		if w.proxy != nil {
			c, s := w.proxy.Counts(), w.start0
			row.counts, row.startup = &c, &s
		}
		pid, err := w.pid()
		if err != nil {
			row.err = err.Error()
		} else {
			row.stat = readProcStat(pid, b.tick)
			row.cpu = cpuPrecise(pid, b.tick) - w.cpu0
			if !row.stat.ok {
				row.err = fmt.Sprintf("pid %d is gone", pid)
			}
		}
		r.rows = append(r.rows, row)
	}
	return r
}
