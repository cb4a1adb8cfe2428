package sim

// world.go: one seed's world: the service, the hosts and their invocations
// of leaderrun, the operator, the timed events, and the trace.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/schedule"
)

const (
	container  = "leaderrun"
	leaseName  = "job"
	connString = blobsim.ConnectionString
)

// Options change how a world runs and what it traces.
type Options struct {
	LogLevel hclog.Level // leaderrun's log in the trace; 0: info
	// Mutate, if set, is called before the world runs: a test that puts a
	// known bug back.
	Mutate func(*Plan)
}

// world is one seed's run.
type world struct {
	plan  Plan
	opts  Options
	start time.Time
	svc   *blobsim.Service
	chk   *checker

	mu      sync.Mutex
	trace   []string
	labels  map[string]string // lease IDs and nonces as the trace names them
	armed   map[int]EventKind // by host: what happens at its next claim
	atRun   map[int]Event     // by host: what happens after its next launch
	pids    int
	hosts   []*host
	ending  bool // no new invocations
	stopped chan struct{}
	wg      sync.WaitGroup
}

// since is the virtual time since the world began.
func (w *world) since() time.Duration { return time.Since(w.start) }

func (w *world) tracef(format string, args ...any) {
	line := fmt.Sprintf("%10s  ", w.since().Round(time.Microsecond)) + fmt.Sprintf(format, args...)
	w.mu.Lock()
	w.trace = append(w.trace, line)
	w.mu.Unlock()
}

func (w *world) nextPid() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pids++
	return 1000 + w.pids
}

// hostOf is the host index of a client name ("host2/3"), -1 for the
// operator.
func (w *world) hostOf(client string) int {
	var h, n int
	if _, err := fmt.Sscanf(client, "host%d/%d", &h, &n); err != nil {
		return -1
	}
	return h
}

// host is one VM of the fleet: it runs its line again and again.
type host struct {
	w    *world
	idx  int
	name string

	mu  sync.Mutex
	n   int           // invocations started
	cur []*invocation // invocations running (cron may overlap them)
}

// invocation is one run of leaderrun on a host, from start to exit.
type invocation struct {
	w    *world
	h    *host
	n    int
	id   string // its --identity: host:N, as HOSTNAME:PID
	sigs chan os.Signal
	ctx  context.Context
	kill context.CancelFunc

	mu       sync.Mutex
	dead     bool            // killed (kill -9)
	frozen   bool            // stopped (SIGSTOP) until thawed
	waiters  []chan struct{} // what waits to go on at the thaw, in the order it stopped
	froze    bool            // it was frozen at some point
	warned   []string        // its WARN and ERROR lines
	leaseIDs map[string]bool // the lease IDs it proposed
	kids     []*child
	exit     int
	ended    bool
	began    time.Time // when it started, and ended (zero: not yet)
	endedAt  time.Time
	jobs     int  // COMMANDs drawn
	checks   int  // --ready-cmd runs
	unready  bool // the latest --ready-cmd failed: it may not acquire
}

// errUnready is a --ready-cmd that fails.
var errUnready = errors.New("sim: --ready-cmd exit status 1")

// checkReady is the host's --ready-cmd: it runs a few milliseconds (none
// while frozen, never once killed) and fails in the plan's spans.
func (inv *invocation) checkReady(ctx context.Context) error {
	inv.mu.Lock()
	inv.checks++
	n := inv.checks
	inv.mu.Unlock()
	d := time.Duration(stream(inv.w.plan.Seed, "ready", inv.id, n).Int64N(int64(30 * time.Millisecond)))
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return ctx.Err()
	}
	if !inv.gate() {
		return errDead
	}
	ready := inv.w.plan.ready(inv.h.idx, inv.w.since())
	inv.mu.Lock()
	inv.unready = !ready
	inv.mu.Unlock()
	if !ready {
		return errUnready
	}
	return nil
}

// gate waits while the invocation is frozen; false if it is dead.
func (inv *invocation) gate() bool {
	for {
		inv.mu.Lock()
		if inv.dead {
			inv.mu.Unlock()
			return false
		}
		if !inv.frozen {
			inv.mu.Unlock()
			return true
		}
		goOn := make(chan struct{})
		inv.waiters = append(inv.waiters, goOn)
		inv.mu.Unlock()
		<-goOn
	}
}

// thaw lets what waits go on, one at a time, a microsecond apart: a
// woken process's threads would race, and a seed must replay exactly.
func (inv *invocation) thawOut() {
	inv.mu.Lock()
	inv.frozen = false
	waiters := inv.waiters
	inv.waiters = nil
	inv.mu.Unlock()
	for _, c := range waiters {
		close(c)
		time.Sleep(time.Microsecond)
	}
}

// jobRand draws what its next COMMAND does.
func (inv *invocation) jobRand() *rand.Rand {
	inv.mu.Lock()
	inv.jobs++
	n := inv.jobs
	inv.mu.Unlock()
	return stream(inv.w.plan.Seed, "job", inv.id, n)
}

// transport is one invocation's way to the service: frozen, it sends
// nothing and reads nothing; dead, nothing at all.
type transport struct {
	inv  *invocation
	next policy.Transporter
}

var errRefused = errors.New("sim: connection refused (this leaderrun is dead)")

func (t transport) Do(req *http.Request) (*http.Response, error) {
	if !t.inv.gate() {
		return nil, errRefused
	}
	if req.Method == http.MethodPut && req.URL.Query().Get("comp") == "metadata" {
		t.inv.w.atClaim(t.inv, req)
	}
	if id := lease.HeaderValue(req.Header, "x-ms-proposed-lease-id"); id != "" {
		t.inv.mu.Lock()
		t.inv.leaseIDs[id] = true
		t.inv.mu.Unlock()
	}
	resp, err := t.next.Do(req)
	if !t.inv.gate() {
		if resp != nil {
			resp.Body.Close()
		}
		return nil, errRefused
	}
	return resp, err
}

// traceWriter puts a host's log lines in the trace, and keeps its warnings.
type traceWriter struct{ inv *invocation }

func (tw traceWriter) Write(b []byte) (int, error) {
	tw.inv.mu.Lock()
	dead := tw.inv.dead
	tw.inv.mu.Unlock()
	if dead {
		return len(b), nil // a killed process writes nothing
	}
	line := strings.TrimRight(string(b), "\n")
	tw.inv.w.tracef("%s: %s", tw.inv.id, line)
	if strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
		tw.inv.w.chk.warned(tw.inv, line)
	}
	return len(b), nil
}

// hostLoop runs a host's line as its mode does, until the world ends.
func (w *world) hostLoop(h *host) {
	defer w.wg.Done()
	r := stream(w.plan.Seed, "host", h.idx)
	p := w.plan
	switch {
	case p.Mode.cron():
		// Cron starts the line every minute, at the same second on every
		// host (give or take a clock's drift), whether or not the last one
		// still runs.
		drift := time.Duration(r.Int64N(int64(2 * time.Second)))
		for t := p.Cron; ; t += p.Cron {
			if !w.sleepUntil(t + drift) {
				return
			}
			w.wg.Add(1)
			go func() { defer w.wg.Done(); h.invoke() }()
		}
	default:
		// A service (Restart=always) or a deploy step retried until it
		// succeeds.
		if !w.sleepUntil(time.Duration(r.Int64N(int64(5 * time.Second)))) {
			return
		}
		for {
			code := h.invoke()
			if (p.Mode == ModeOnce || p.Mode == ModeOncePerHost) && code == exit.OK {
				return
			}
			if !w.sleepUntil(w.since() + time.Duration(2+r.IntN(8))*time.Second) {
				return
			}
		}
	}
}

// sleepUntil sleeps until the world's time t; false if the world ends first.
func (w *world) sleepUntil(t time.Duration) bool {
	d := t - w.since()
	if d > 0 {
		select {
		case <-time.After(d):
		case <-w.stopped:
			return false
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.ending
}

// invoke runs leaderrun once on h and returns its exit status.
func (h *host) invoke() int {
	w, p := h.w, h.w.plan
	h.mu.Lock()
	h.n++
	ctx, cancel := context.WithCancel(context.Background())
	inv := &invocation{w: w, h: h, n: h.n, id: fmt.Sprintf("%s:%d", h.name, h.n), sigs: make(chan os.Signal, 4), ctx: ctx, kill: cancel,
		leaseIDs: map[string]bool{}, began: time.Now()}
	h.cur = append(h.cur, inv)
	h.mu.Unlock()
	w.chk.began(inv)
	defer func() {
		h.mu.Lock()
		for i, c := range h.cur {
			if c == inv {
				h.cur = append(h.cur[:i], h.cur[i+1:]...)
				break
			}
		}
		h.mu.Unlock()
		cancel()
	}()

	client := fmt.Sprintf("%s/%d", h.name, h.n)
	level := w.opts.LogLevel
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "leaderrun", Level: level, Output: traceWriter{inv}, DisableTime: true})
	blob, err := lease.NewLeaseBlob(lease.ClientConfig{
		Container: container, Blob: leaseName, ConnectionString: connString, Logger: log,
		Transport: transport{inv: inv, next: w.svc.Transport(client)},
		Rand:      stream(p.Seed, "client", inv.id),
	})
	if err != nil {
		w.violate("%s: lease blob: %v", inv.id, err)
		return exit.Internal
	}
	o := leader.Options{
		Client: blob,
		Lease: lease.Config{
			Duration: p.LeaseDuration, KillGrace: p.KillGrace, PollInterval: p.PollInterval,
			Identity: inv.id, Version: "sim", Logger: log, Slots: p.Slots,
			Rand: rand.NewPCG(p.Seed, uint64(h.idx)<<32|uint64(h.n)),
		},
		Argv:           []string{"job"},
		StopSignal:     syscall.SIGTERM,
		ConflictCode:   exit.Conflict,
		StorageTimeout: p.StorageTimeout,
		MaxRuntime:     p.MaxRuntime,
		Launcher:       launcher{inv: inv},
		Signals:        inv.sigs,
		DeputyPoll:     p.DeputyPoll,
	}
	if _, ok := p.Unready[h.idx]; ok {
		o.CheckReady = inv.checkReady
	}
	switch p.Mode {
	case ModeOncePer:
		o.NoWait, o.ConflictCode, o.OncePer, o.Splay = true, exit.OK, p.OncePer, p.Splay
	case ModeSchedule:
		s, err := schedule.Parse(p.Schedule)
		if err != nil {
			w.violate("schedule: %v", err)
			return exit.Internal
		}
		o.Schedule, o.Splay, o.Retries, o.RetryDelay = s, p.Splay, p.Retries, p.RetryDelay
	case ModeOnce:
		o.Once, o.Timeout = true, 10*time.Minute
	case ModeOncePerHost:
		o.OncePerHost = h.name
	}
	w.tracef("%s: start", inv.id)
	err = leader.Run(ctx, o)
	code, ok := exit.Code(err)
	if !ok {
		code = exit.OK
		if err != nil {
			code = exit.Internal
		}
	}
	inv.mu.Lock()
	inv.exit, inv.ended, inv.endedAt = code, true, time.Now()
	dead := inv.dead
	inv.mu.Unlock()
	if !dead {
		if err != nil {
			w.tracef("%s: exit %d: %v", inv.id, code, err)
		} else {
			w.tracef("%s: exit %d", inv.id, code)
		}
		if err != nil && code == exit.Internal {
			w.violate("%s: exited %d: %v", inv.id, code, err)
		}
	}
	w.chk.ended(inv)
	return code
}

// events runs the plan's timed events. The operator's go to one person,
// who does them in order, each until it succeeds.
func (w *world) events() {
	defer w.wg.Done()
	op := w.operator()
	acts := make(chan Event, len(w.plan.Events))
	defer close(acts)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for e := range acts {
			op.act(e)
		}
	}()
	for _, e := range w.plan.Events {
		if !w.sleepUntil(e.At) {
			return
		}
		w.tracef("event: %s", e)
		switch e.Kind {
		case EvSigterm:
			w.signal(e.Host, syscall.SIGTERM)
		case EvSigint:
			w.signal(e.Host, syscall.SIGINT)
			if e.Twice {
				w.wg.Add(1)
				go func() {
					defer w.wg.Done()
					if w.sleepUntil(w.since() + 300*time.Millisecond) {
						w.signal(e.Host, syscall.SIGINT)
					}
				}()
			}
		case EvKill:
			w.killHost(e.Host)
		case EvFreeze:
			w.freezeHost(e.Host, e.Dur)
		case EvBreak, EvPause, EvResume, EvDrain, EvTrigger:
			acts <- e
		case EvSigtermAtClaim, EvKillAtClaim:
			w.mu.Lock()
			if w.armed == nil {
				w.armed = map[int]EventKind{}
			}
			w.armed[e.Host] = e.Kind
			w.mu.Unlock()
		case EvFreezeAtLaunch:
			w.mu.Lock()
			if w.atRun == nil {
				w.atRun = map[int]Event{}
			}
			w.atRun[e.Host] = e
			w.mu.Unlock()
		}
	}
}

// atClaim fires what is armed for inv's host, if anything, a moment after
// its claim's write (a metadata write on a lease blob) went out.
func (w *world) atClaim(inv *invocation, req *http.Request) {
	name := strings.TrimPrefix(req.URL.Path, "/devstoreaccount1/"+container+"/")
	if lease.ParseBlobName(name).Kind != lease.KindSlot || w.since() >= w.plan.FaultEnd {
		return
	}
	w.mu.Lock()
	kind, ok := w.armed[inv.h.idx]
	delete(w.armed, inv.h.idx)
	w.mu.Unlock()
	if !ok {
		return
	}
	d := time.Duration(stream(w.plan.Seed, "at-claim", inv.id).Int64N(int64(3 * time.Millisecond)))
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		time.Sleep(d)
		w.tracef("event: %s host%d (%s's claim in flight)", kind, inv.h.idx, inv.id)
		if kind == EvKillAtClaim {
			w.killHost(inv.h.idx)
		} else {
			w.signal(inv.h.idx, syscall.SIGTERM)
		}
	}()
}

// atLaunch fires what is armed for c's host, if anything: a freeze of its
// leaderrun, a random while into COMMAND's max runtime.
func (w *world) atLaunch(c *child) {
	if w.since() >= w.plan.FaultEnd {
		return
	}
	w.mu.Lock()
	e, ok := w.atRun[c.inv.h.idx]
	delete(w.atRun, c.inv.h.idx)
	w.mu.Unlock()
	if !ok {
		return
	}
	d := time.Duration(stream(w.plan.Seed, "at-launch", c.inv.id).Int64N(int64(w.plan.MaxRuntime)))
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		time.Sleep(d)
		w.tracef("event: %s host%d (%s's COMMAND %s in)", e.Kind, e.Host, c.inv.id, d.Round(time.Millisecond))
		w.freezeHost(e.Host, e.Dur)
	}()
}

// signal sends sig to every leaderrun running on host i, one after the
// other a microsecond apart: two that react at one instant would race, and
// a seed must replay exactly.
func (w *world) signal(i int, sig os.Signal) {
	h := w.hosts[i]
	h.mu.Lock()
	invs := slices.Clone(h.cur)
	h.mu.Unlock()
	for n, inv := range invs {
		if n > 0 {
			time.Sleep(time.Microsecond)
		}
		select {
		case inv.sigs <- sig:
		default:
		}
	}
}

// killHost is kill -9 of every leaderrun on host i: the lifeline ends, so
// the guard SIGKILLs COMMAND; nothing more reaches the service from it.
func (w *world) killHost(i int) {
	h := w.hosts[i]
	h.mu.Lock()
	invs := append([]*invocation(nil), h.cur...)
	h.mu.Unlock()
	for _, inv := range invs {
		inv.mu.Lock()
		inv.dead = true
		kids := append([]*child(nil), inv.kids...)
		inv.mu.Unlock()
		inv.thawOut() // what waited finds it dead
		for _, c := range kids {
			c.kill()
		}
		inv.kill()
		w.tracef("%s: killed", inv.id)
	}
}

// freezeHost stops every leaderrun on host i for d (SIGSTOP, SIGCONT).
func (w *world) freezeHost(i int, d time.Duration) {
	h := w.hosts[i]
	h.mu.Lock()
	invs := append([]*invocation(nil), h.cur...)
	h.mu.Unlock()
	for _, inv := range invs {
		inv.mu.Lock()
		if !inv.frozen && !inv.dead {
			inv.frozen, inv.froze = true, true
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				select {
				case <-time.After(d):
				case <-w.stopped:
				}
				w.tracef("%s: thawed", inv.id)
				inv.thawOut()
			}()
		}
		inv.mu.Unlock()
	}
}

// run runs the world to its end, then lets every invocation finish.
func (w *world) run() {
	w.start = time.Now()
	w.tracef("%s", w.plan)
	for i := range w.plan.Hosts {
		h := &host{w: w, idx: i, name: fmt.Sprintf("host%d", i)}
		w.hosts = append(w.hosts, h)
	}
	for _, h := range w.hosts {
		w.wg.Add(1)
		go w.hostLoop(h)
	}
	w.wg.Add(1)
	go w.events()

	time.Sleep(w.plan.End)
	w.tracef("end: no new invocations; SIGTERM to those still running")
	w.mu.Lock()
	w.ending = true
	w.mu.Unlock()
	close(w.stopped)
	for i := range w.hosts {
		w.signal(i, syscall.SIGTERM)
		time.Sleep(time.Microsecond)
	}
	// Every invocation ends within its grace and a release; past a bound,
	// it is killed, so that the world always ends.
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.plan.KillGrace + 2*w.plan.LeaseDuration + time.Minute):
		w.violate("invocations still running %s after the end: killed", w.plan.KillGrace+2*w.plan.LeaseDuration+time.Minute)
		for i := range w.hosts {
			w.killHost(i)
		}
		<-done
	}
	w.chk.final()
}

func (w *world) launched(c *child) { w.chk.launched(c); w.atLaunch(c) }
func (w *world) died(c *child)     { w.chk.died(c) }

// violate records a broken invariant.
func (w *world) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.tracef("VIOLATION: %s", msg)
	w.chk.add(msg)
}

// writeTrace writes the whole trace to out.
func (w *world) writeTrace(out io.Writer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.trace {
		fmt.Fprintln(out, l)
	}
}
