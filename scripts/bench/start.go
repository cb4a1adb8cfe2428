package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
	"github.com/leaderrun/leaderrun/lease"
)

// startResult is figure 1: the cost of running `true` under a free lock.
type startResult struct {
	leaderrun, flock, etcd sample
	// The breakdown: `true` alone (fork and exec), `leaderrun version` (a
	// start of this Go binary: runtime, package initialisation, cobra), the
	// guard alone (leaderrun re-executed as the command's process group
	// leader, until the command has run), one request made in-process on a
	// warm connection (get properties), and the run with o.rtt added to
	// every request by a proxy.
	truth, version, guard, request, withRTT sample
	requests                                faultproxy.Counts // one run, through a counting proxy
	// Package initialisation of one leaderrun start (GODEBUG=inittrace=1):
	// how many packages, and the clock time their init functions took.
	inits                     int
	initClock                 sample
	guardErr, etcdErr, rttErr string
	// The storage server's CPU time (utime + stime) over all the timed
	// runs of leaderrun and of etcdctl lock, and how many runs.
	serverCPU  map[string]time.Duration
	serverRuns map[string]int
	failures   map[string]string // a tool's first failure
	err        string
}

// tool is one of the commands timed in a round.
type tool struct {
	name string
	env  []string
	argv []string
	into *sample
	run  func() (time.Duration, error) // instead of argv
}

// startCost measures figure 1. Long because it lists the interleaved
// jobs (leaderrun, etcd, flock, the breakdown) as one table of closures,
// best read together.
func (b *bench) startCost(ctx context.Context) *startResult {
	r := &startResult{failures: map[string]string{}, serverCPU: map[string]time.Duration{}, serverRuns: map[string]int{}}
	name := "start-" + testenv.RandHex(4)
	out, err := os.OpenFile(filepath.Join(b.work, "start.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.err = err.Error()
		return r
	}
	defer out.Close()
	lockFile := filepath.Join(b.work, "flock.lock")

	server := map[string]int{"leaderrun": b.az.PID} // whose CPU each tool's runs cost
	if b.etcd != nil {
		server["etcdctl"] = b.etcd.proc.Pid()
	}
	tools := []tool{
		{name: "leaderrun", env: b.direct(), argv: b.lr(name, []string{"-q"}, "true"), into: &r.leaderrun},
		{name: "flock", env: testenv.BaseEnv(), argv: []string{"flock", lockFile, "true"}, into: &r.flock},
		{name: "true", env: testenv.BaseEnv(), argv: []string{"true"}, into: &r.truth},
		{name: "version", env: testenv.BaseEnv(), argv: []string{b.bin.leaderrun, "version"}, into: &r.version},
		{name: "guard", into: &r.guard, run: func() (time.Duration, error) { return guardAlone(b.bin.leaderrun, b.work) }},
	}
	if b.etcd != nil {
		tools = append(tools, tool{name: "etcdctl", env: b.etcd.env(), argv: b.etcd.lockArgv(name, 0, "true"), into: &r.etcd})
	} else {
		r.etcdErr = b.etcdWhy
	}
	runTool := func(t tool) (time.Duration, error) {
		if t.run != nil {
			return t.run()
		}
		return timed(t.env, b.work, out, t.argv...)
	}

	// Warm-up: the first leaderrun creates the container and the blob, the
	// first runs fill the page cache.
	for range 3 {
		for _, t := range tools {
			if _, err := runTool(t); err != nil && t.name == "leaderrun" {
				r.err = fmt.Sprintf("leaderrun -- true failed: %v%s", err, testenv.LogTail(out.Name()))
				return r
			}
		}
	}
	// Rounds, each tool once per round in a random order, so that a noisy
	// moment of the machine hits them alike.
	for range b.o.rounds {
		for _, i := range rand.Perm(len(tools)) {
			if ctx.Err() != nil {
				r.err = "interrupted"
				return r
			}
			t := tools[i]
			pid := server[t.name]
			var cpu0 time.Duration
			if pid > 0 {
				cpu0 = cpuTime(pid, b.tick)
			}
			d, err := runTool(t)
			if pid > 0 && err == nil {
				r.serverCPU[t.name] += cpuTime(pid, b.tick) - cpu0
				r.serverRuns[t.name]++
			}
			if err != nil {
				if _, seen := r.failures[t.name]; !seen {
					r.failures[t.name] = err.Error()
				}
				continue
			}
			*t.into = append(*t.into, d)
		}
	}
	if len(r.guard) == 0 {
		r.guardErr = r.failures["guard"]
	}
	if b.etcd != nil && len(r.etcd) == 0 {
		r.etcdErr = "etcdctl lock failed: " + r.failures["etcdctl"]
	}

	// The requests of one run, counted by a proxy; then the run with every
	// request delayed by o.rtt.
	p, err := faultproxy.New(b.az.Target)
	if err != nil {
		r.err = err.Error()
		return r
	}
	defer p.Close()
	env, flags := b.viaProxy(p)
	argv := b.lr(name, append(flags, "-q"), "true")
	if _, err := timed(env, b.work, out, argv...); err != nil {
		r.err = fmt.Sprintf("leaderrun through the proxy failed: %v", err)
		return r
	}
	r.requests = p.Counts()
	if b.o.rtt > 0 {
		p.Set(faultproxy.Mode{Latency: b.o.rtt})
		for range max(b.o.rounds/4, 5) {
			d, err := timed(env, b.work, out, argv...)
			if err != nil {
				r.rttErr = err.Error()
				break
			}
			r.withRTT = append(r.withRTT, d)
		}
	}

	// Package initialisation, as the Go runtime reports it.
	for range 15 {
		n, d, err := initTrace(b.bin.leaderrun)
		if err != nil {
			break
		}
		r.inits = n
		r.initClock = append(r.initClock, d)
	}

	// One request, in-process, as leaderrun's client makes it.
	c, err := lease.NewLeaseBlob(lease.ClientConfig{ConnectionString: b.az.ConnString, Container: b.container, Blob: name})
	if err != nil {
		r.err = err.Error()
		return r
	}
	for i := range 60 {
		t0 := time.Now()
		if _, err := c.Properties(ctx); err != nil {
			r.err = fmt.Sprintf("get properties: %v", err)
			return r
		}
		if i >= 10 {
			r.request = append(r.request, time.Since(t0))
		}
	}
	return r
}

// initTrace runs `leaderrun version` with GODEBUG=inittrace=1 and sums
// its "init PKG @T ms, D ms clock, …" lines.
func initTrace(leaderrun string) (int, time.Duration, error) {
	cmd := exec.Command(leaderrun, "version")
	cmd.Env = append(testenv.BaseEnv(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, 0, err
	}
	n, total := 0, 0.0
	for line := range strings.SplitSeq(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != "init" || f[5] != "ms" {
			continue
		}
		var ms float64
		if _, err := fmt.Sscanf(f[4], "%g", &ms); err != nil {
			continue
		}
		n++
		total += ms
	}
	if n == 0 {
		return 0, 0, errors.New("no inittrace lines")
	}
	return n, time.Duration(total * float64(time.Millisecond)), nil
}

// guardAlone starts leaderrun's guard the way leaderrun does (the hidden
// first argument and protocol, a new process group, the lifeline on fd 3,
// the status pipe on fd 4, the go-ahead pipe on fd 5) with `true` as the
// command, lets it settle, and times the go-ahead until the guard reports
// the command's status: what remains on a run's critical path, since
// leaderrun starts its guard while it acquires the lease. It is an
// internal interface: if the guard does not report within 5 s, the measure
// is given up.
func guardAlone(leaderrun, dir string) (time.Duration, error) {
	var theirs, ours [3]*os.File
	for i := range theirs {
		r, w, err := os.Pipe()
		if err != nil {
			return 0, err
		}
		if i == 1 { // status: the guard writes, we read
			theirs[i], ours[i] = w, r
		} else {
			theirs[i], ours[i] = r, w
		}
		defer ours[i].Close()
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(leaderrun, "__leaderrun-guard", "v2", truePath, "--", "true")
	cmd.Dir, cmd.Env = dir, testenv.BaseEnv()
	cmd.ExtraFiles = theirs[:]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	for _, f := range theirs {
		f.Close()
	}
	if err != nil {
		return 0, err
	}
	// Let the guard start and block on the go-ahead, as it does while
	// leaderrun acquires.
	time.Sleep(30 * time.Millisecond)
	// The go-ahead: no kill deadline, the environment, each entry NUL-ended.
	env := testenv.BaseEnv()
	var body []byte
	for _, kv := range env {
		body = append(append(body, kv...), 0)
	}
	head := make([]byte, 16)
	binary.BigEndian.PutUint32(head[8:], uint32(len(env)))
	binary.BigEndian.PutUint32(head[12:], uint32(len(body)))
	launch, status := ours[2], ours[1]
	t0 := time.Now()
	_, werr := launch.Write(append(head, body...))
	launch.Close()
	_ = status.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, rerr := status.Read(buf)
	d := time.Since(t0)
	ours[0].Close() // the lifeline's end: the guard kills its (empty) group and exits
	if werr != nil || rerr != nil || !strings.HasPrefix(string(buf[:n]), "exit 0") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, errors.New("the guard did not report `exit 0` (its internal protocol may have changed)")
	}
	_ = cmd.Wait()
	return d, nil
}

// opsLine lists a Counts' operations, most frequent first: "Acquire 1,
// GetProperties 1, SetMetadata 3, Release 1".
func opsLine(c faultproxy.Counts) string {
	type kv struct {
		k string
		v int64
	}
	var ops []kv
	for k, v := range c.ByOp {
		ops = append(ops, kv{k, v})
	}
	order := map[string]int{faultproxy.OpCreateContainer: 0, faultproxy.OpCreateBlob: 1, faultproxy.OpAcquire: 2,
		faultproxy.OpGetProperties: 3, faultproxy.OpSetMetadata: 4, faultproxy.OpRenew: 5, faultproxy.OpRelease: 6, faultproxy.OpBreak: 7}
	sort.Slice(ops, func(i, j int) bool {
		oi, iok := order[ops[i].k]
		oj, jok := order[ops[j].k]
		if iok != jok {
			return iok
		}
		if oi != oj {
			return oi < oj
		}
		return ops[i].k < ops[j].k
	})
	var parts []string
	for _, o := range ops {
		parts = append(parts, fmt.Sprintf("%s %d", o.k, o.v))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
