package chaos

// A trial: staging the holder and the follower, injecting the fault,
// waiting for the outcome, and tearing everything down.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/leaderrun/leaderrun/internal/testkit/fakeimds"
	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// leaderrun's defaults, which every trial uses, and what follows from them.
const (
	// RenewInterval is the holder's renew period (lease duration / 3).
	RenewInterval = 5 * time.Second
	// DeadBy: with t_ok the send time of the last successful acquire or
	// renew, the holder's child and everything in its group must be dead by
	// t_ok+14s (SIGTERM at t_ok+8.5s, SIGKILL at t_ok+13.5s, 0.5 s to land),
	// a second before the 15 s lease can pass to anyone else.
	DeadBy = 14 * time.Second
	// FollowerPoll is the waiting follower's poll interval (±20 %).
	FollowerPoll = 200 * time.Millisecond
	// DefaultTrialTimeout bounds a trial whose Timeout is zero.
	DefaultTrialTimeout = 2 * time.Minute

	// exitLost is leaderrun's status when leadership was lost while the
	// command ran.
	exitLost = 76
	// takeoverWait bounds the wait, after the fault (or the wake-up), for
	// the holder to exit and the follower's child to begin; the slowest
	// expected case, a stubborn child behind a black hole, is ~19 s.
	takeoverWait = 45 * time.Second
	// startWait bounds the wait for the holder's child to begin.
	startWait = 30 * time.Second
	// followerSettle bounds the wait for the follower to report that it
	// waits for the lease.
	followerSettle = 10 * time.Second
	// stopWait is how long teardown waits after SIGTERM before SIGKILL.
	stopWait = 20 * time.Second
	// linger lets both sides record a little more once the end condition
	// is met.
	linger = 300 * time.Millisecond
	// pollEvery is how often the trial looks at the records and processes.
	pollEvery = 20 * time.Millisecond
)

// The identities of the two leaderrun processes of a trial; the children
// record them (LEADERRUN_IDENTITY).
const (
	holderID   = "holder"
	followerID = "follower"
)

// The VM names the fake metadata services give the two (Eviction).
const (
	holderVM   = "vm-holder"
	followerVM = "vm-follower"
)

// Trial is one run of one scenario.
type Trial struct {
	Kind   Kind
	Params Params
	// Dir receives the trial's files: records (the children's), holder.log
	// and follower.log (leaderrun's output, holder at trace level), and
	// break.log. It must exist.
	Dir string
	// Timeout bounds the whole trial; 0 means DefaultTrialTimeout.
	Timeout time.Duration
	// Slots, when more than 1, runs the trial on a lease of that many
	// slots: Slots−1 fillers (slots.go) hold the other slots throughout,
	// so the follower can only take the holder's. Only the scenarios
	// whose fault touches the holder alone allow it (Kind.SlotsOK).
	Slots int
}

// Run stages one trial: it starts the holder (behind its own fault proxy)
// and the follower, injects the fault, waits for the outcome, stops
// everything it started (by PID; leftovers of the children are killed and
// reported), and judges. It never panics on a product failure: the verdict
// is in the Result. Trials are independent (own lease, container, proxy and
// directory) and may run in parallel.
func Run(ctx context.Context, env *Env, tr Trial) *Result {
	if tr.Timeout <= 0 {
		tr.Timeout = DefaultTrialTimeout
	}
	r := &Result{Trial: tr, Lease: "lease-" + testenv.RandHex(6), Container: "chaos-" + testenv.RandHex(8), Start: time.Now()}
	t := &trial{env: env, res: r, rec: NewRecords(filepath.Join(tr.Dir, "records"))}
	tctx, cancel := context.WithTimeout(ctx, tr.Timeout)
	err := t.stage(tctx)
	cancel()
	t.teardown()
	switch {
	case ctx.Err() != nil:
		r.Err = fmt.Errorf("interrupted: %w", context.Cause(ctx))
	case err != nil:
		r.Err = err
	default:
		t.judge()
	}
	r.Wall = time.Since(r.Start)
	return r
}

type trial struct {
	env *Env
	res *Result
	rec *Records

	proxy            *faultproxy.Proxy
	ops              *leaseOps
	imds             map[string]*fakeimds.Server // Eviction: each side's metadata service, by identity
	holder, follower *testenv.Process
	fillers          []*testenv.Process // slots.go
	faultOff         *time.Timer
	frozen           bool
	deputyState                // Deputy: the third leaderrun (deputy.go)
	alignedAt        time.Time // FlakyShort: the renewal the fault is placed after
	stalled          string    // why the expected end was not reached
	failures         []string  // found while staging
}

func (t *trial) holderArgs() []string {
	p := t.res.Params
	args := []string{"-l", t.res.Lease, "--container", t.res.Container,
		"--endpoint", t.proxy.URL() + t.env.storage.AccountPath, "--identity", holderID, "--log-level", "trace"}
	args = append(append(args, t.slotFlags()...), "--", t.env.Child, "-log", t.rec.path, "-grandchildren", strconv.Itoa(p.Grandchildren))
	if p.IgnoreTerm {
		args = append(args, "-ignore-term")
	}
	if p.Escape != "" {
		args = append(args, "-escape", p.Escape)
	}
	return t.withEvents(args)
}

func (t *trial) followerArgs() []string {
	args := []string{"-l", t.res.Lease, "--container", t.res.Container, "--identity", followerID, "--log-level", "debug"}
	if t.res.Kind != Deputy { // the deputy's follower polls at the default, slower than the deputy
		args = append(args, "--poll-interval", FollowerPoll.String())
	}
	return t.withEvents(append(append(args, t.slotFlags()...), "--", t.env.Child, "-log", t.rec.path))
}

// withEvents adds --scheduled-events in front of args in the Eviction
// scenario.
func (t *trial) withEvents(args []string) []string {
	if t.res.Kind != Eviction {
		return args
	}
	return append([]string{"--scheduled-events"}, args...)
}

// imdsEnv starts a fake metadata service for each side (Eviction) and
// returns the environment variable that points identity's leaderrun at its
// own; nothing otherwise.
func (t *trial) imdsEnv(identity string) ([]string, error) {
	if t.res.Kind != Eviction {
		return nil, nil
	}
	vm := map[string]string{holderID: holderVM, followerID: followerVM}[identity]
	s, err := fakeimds.New(vm)
	if err != nil {
		return nil, err
	}
	if t.imds == nil {
		t.imds = map[string]*fakeimds.Server{}
	}
	t.imds[identity] = s
	return []string{"LEADERRUN_IMDS_ENDPOINT=" + s.URL()}, nil
}

// stage runs the trial up to its end condition. An error means the trial
// could not be staged; product failures are recorded for judge.
func (t *trial) stage(ctx context.Context) error {
	var err error
	if t.proxy, err = faultproxy.New(t.env.storage.Target); err != nil {
		return err
	}
	t.ops = watchLeaseOps(t.proxy)

	// The holder talks through the proxy, with the account key (the
	// connection string's endpoint would bypass it).
	holderEnv := append(testenv.BaseEnv(), "AZURE_STORAGE_ACCOUNT="+t.env.storage.Account, "AZURE_STORAGE_KEY="+t.env.storage.Key)
	ie, err := t.imdsEnv(holderID)
	if err != nil {
		return err
	}
	holderEnv = append(holderEnv, ie...)
	if t.holder, err = t.launch(holderID, holderEnv, t.holderArgs()); err != nil {
		return err
	}
	if _, err := t.waitFor(ctx, time.Now().Add(startWait), func() bool { return t.rec.has(holderID) || t.holder.Exited() }); err != nil {
		return err
	}
	if !t.rec.has(holderID) {
		return fmt.Errorf("the holder's child did not start (holder: %s)%s", exitOf(t.holder, true), testenv.LogTail(t.holder.Log))
	}

	if err := t.startFillers(ctx); err != nil { // slots.go
		return err
	}
	if t.res.Kind == Deputy {
		if err := t.startDeputy(ctx); err != nil { // deputy.go
			return err
		}
	}
	followerEnv := append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+t.env.storage.ConnString)
	if ie, err = t.imdsEnv(followerID); err != nil {
		return err
	}
	followerEnv = append(followerEnv, ie...)
	if t.follower, err = t.launch(followerID, followerEnv, t.followerArgs()); err != nil {
		return err
	}
	// The follower logs "waiting for the lease" once it has found the lease
	// held. Should that line change, a follower that is still running
	// without having run its child after followerSettle is taken as
	// waiting too.
	logged := func() bool { return testenv.LogHas(t.follower.Log, "waiting for the lease") }
	settled := func() bool { return logged() || t.follower.Exited() || t.rec.has(followerID) }
	if _, err := t.waitFor(ctx, time.Now().Add(followerSettle), settled); err != nil {
		return err
	}
	if t.follower.Exited() || t.rec.has(followerID) {
		return fmt.Errorf("the follower did not settle into waiting (follower: %s)%s", exitOf(t.follower, true), testenv.LogTail(t.follower.Log))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	if !testenv.SleepCtx(ctx, t.res.Params.Warmup) {
		return ctx.Err()
	}
	if t.holder.Exited() || t.rec.has(followerID) {
		t.failures = append(t.failures, fmt.Sprintf("before any fault, the holder exited (%s) or the follower ran", exitOf(t.holder, true)))
		return nil
	}
	if err := t.inject(ctx); err != nil {
		return err
	}
	await := t.awaitEnd
	if t.res.Kind == Deputy {
		await = t.awaitDeputyEnd
	}
	if err := await(ctx); err != nil {
		return err
	}
	testenv.SleepCtx(ctx, linger)
	return t.rec.Poll()
}

// inject starts the scenario's fault and sets FaultAt and LastRenewal.
func (t *trial) inject(ctx context.Context) error {
	r, p := t.res, t.res.Params
	switch r.Kind {
	case BlackHole, Reset, FlakyLong, Stubborn, Throttle, LostAnswer:
		t.fault(p.Mode, p.Length)
	case FlakyShort:
		// Align to a lease request (the renewal sent every 5 s): the fault
		// then covers the next renewal and ends before a retry must
		// succeed (see Kind.Random).
		n0, _ := t.ops.snapshot()
		deadline := time.Now().Add(2 * RenewInterval)
		for {
			n, last := t.ops.snapshot()
			if n > n0 {
				t.alignedAt = last
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("no renewal reached the proxy within %s", 2*RenewInterval)
			}
			if !testenv.SleepCtx(ctx, 2*time.Millisecond) {
				return ctx.Err()
			}
		}
		if !testenv.SleepCtx(ctx, time.Until(t.alignedAt.Add(p.Offset))) {
			return ctx.Err()
		}
		t.fault(p.Mode, p.Length)
	case Break:
		r.LastRenewal = t.ops.lastBefore(t.proxy.Counts(), time.Now())
		r.FaultAt = time.Now()
		if msg := t.breakLease(ctx); msg != "" {
			t.failures = append(t.failures, msg)
		}
	case Kill9:
		r.LastRenewal = t.ops.lastBefore(t.proxy.Counts(), time.Now())
		r.FaultAt = time.Now()
		if err := t.holder.Signal(syscall.SIGKILL); err != nil {
			return err
		}
	case Escape:
		if p.Stop == "lost" {
			t.fault(p.Mode, p.Length)
			break
		}
		r.LastRenewal = t.ops.lastBefore(t.proxy.Counts(), time.Now())
		r.FaultAt = time.Now()
		sig := syscall.SIGTERM
		if p.Stop == "kill9" {
			sig = syscall.SIGKILL
		}
		if err := t.holder.Signal(sig); err != nil {
			return err
		}
	case Deputy:
		return t.injectDeputy(ctx)
	case Freeze:
		r.LastRenewal = t.ops.lastBefore(t.proxy.Counts(), time.Now())
		if err := t.holder.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		r.FaultAt, t.frozen = time.Now(), true
		slept := testenv.SleepCtx(ctx, p.Length)
		if err := t.holder.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		r.WakeAt, t.frozen = time.Now(), false
		if !slept {
			return ctx.Err()
		}
	case StorageLoss:
		r.LastRenewal = t.ops.lastBefore(t.proxy.Counts(), time.Now())
		r.FaultAt = time.Now()
		if err := t.deleteStorage(ctx, p.Delete); err != nil {
			return err
		}
	case Eviction:
		// NotBefore travels in whole seconds: the deadline is the one sent.
		r.LastRenewal = t.ops.lastBefore(t.proxy.Counts(), time.Now())
		r.FaultAt = time.Now()
		r.NotBefore = r.FaultAt.Add(p.Notice).Truncate(time.Second)
		t.imds[holderID].AddPreempt(holderVM, r.NotBefore)
	default:
		return fmt.Errorf("chaos: unknown scenario %d", r.Kind)
	}
	return nil
}

// fault switches the proxy to mode now and back to normal after length.
// FaultAt is taken after the switch: every request the proxy judged under
// the old mode was sent before it, so t_ok < FaultAt.
func (t *trial) fault(mode faultproxy.Mode, length time.Duration) {
	before, readAt := t.proxy.Counts(), time.Now()
	t.proxy.Set(mode)
	t.res.FaultAt = time.Now()
	if after := t.proxy.Counts(); leaseOpCount(after) != leaseOpCount(before) {
		t.res.LastRenewal = t.res.FaultAt
	} else {
		t.res.LastRenewal = t.ops.lastBefore(before, readAt)
	}
	t.faultOff = time.AfterFunc(length, func() { t.proxy.Set(faultproxy.Mode{}) })
}

// awaitEnd waits for the scenario's outcome. Not reaching it in time is a
// product failure (stalled), not an error.
func (t *trial) awaitEnd(ctx context.Context) error {
	r := t.res
	if r.Kind == FlakyShort {
		// Observe past the point where a loss would have shown: the stop
		// deadline is at most alignedAt+8.5s.
		until := t.alignedAt.Add(10500 * time.Millisecond)
		if end := r.FaultAt.Add(r.Params.Length + time.Second); end.After(until) {
			until = end
		}
		_, err := t.waitFor(ctx, until, func() bool { return t.holder.Exited() || t.rec.has(followerID) })
		return err
	}
	if r.Kind == Throttle || r.Kind == LostAnswer {
		// Either outcome is right: leadership kept, or lost in time. Watch
		// past the fault and the stop deadline a renewal lost at its end
		// would bring; a holder still running then kept its leadership.
		until := r.FaultAt.Add(r.Params.Length + 10*time.Second)
		if _, err := t.waitFor(ctx, until, func() bool { return t.holder.Exited() || t.rec.has(followerID) }); err != nil || !t.holder.Exited() {
			return err
		}
	}
	from := r.FaultAt
	if !r.WakeAt.IsZero() {
		from = r.WakeAt
	}
	done := func() bool { return t.holder.Exited() && t.rec.has(followerID) }
	met, err := t.waitFor(ctx, from.Add(takeoverWait), done)
	if err != nil || met {
		return err
	}
	var missing []string
	if !t.holder.Exited() {
		missing = append(missing, "the holder had not exited")
	}
	if !t.rec.has(followerID) {
		missing = append(missing, "the follower's child had not begun")
	}
	t.stalled = fmt.Sprintf("%s after the fault: %s", fmtDur(time.Since(r.FaultAt)), strings.Join(missing, ", "))
	return nil
}

// waitFor polls the records every pollEvery until cond holds (true), the
// deadline passes or ctx ends (false). An error is a malformed record.
func (t *trial) waitFor(ctx context.Context, deadline time.Time, cond func() bool) (bool, error) {
	var err error
	met := testenv.WaitUntil(ctx, deadline, pollEvery, func() bool {
		if err = t.rec.Poll(); err != nil {
			return true
		}
		return cond()
	})
	return met && err == nil, err
}

// breakLease runs `leaderrun break` with the default period; it returns a
// failure message if the command fails.
func (t *trial) breakLease(ctx context.Context) string {
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	logPath := filepath.Join(t.res.Dir, "break.log")
	cmd := exec.CommandContext(bctx, t.env.Leaderrun, "break", "-l", t.res.Lease, "--container", t.res.Container)
	cmd.Env = append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+t.env.storage.ConnString)
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(logPath, out, 0o644)
	if err != nil {
		return fmt.Sprintf("leaderrun break failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

// deleteStorage deletes the lease's container, or the blob itself (with
// the holder's lease ID, which the child recorded: a leased blob cannot be
// deleted without it).
func (t *trial) deleteStorage(ctx context.Context, what string) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cc, err := container.NewClientFromConnectionString(t.env.storage.ConnString, t.res.Container, nil)
	if err != nil {
		return err
	}
	if what == "container" {
		_, err = cc.Delete(dctx, nil)
		return err
	}
	var leaseID string
	for _, p := range t.rec.Procs() {
		if p.Owner == holderID && p.LeaseID != "" {
			leaseID = p.LeaseID
		}
	}
	if leaseID == "" {
		return errors.New("the holder's child recorded no lease ID")
	}
	_, err = cc.NewBlobClient(t.res.Lease).Delete(dctx, &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{
		LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: &leaseID}}})
	return err
}

// teardown stops everything the trial started, by PID, and collects the
// records. It always runs, whatever stage did.
func (t *trial) teardown() {
	r := t.res
	if t.faultOff != nil {
		t.faultOff.Stop()
	}
	if t.proxy != nil {
		t.proxy.Set(faultproxy.Mode{}) // let the holder release
	}
	r.TeardownAt = time.Now()
	if t.frozen {
		_ = t.holder.Signal(syscall.SIGCONT)
	}
	t.endDeputyFault()                                                                                // deputy.go
	holderDone, followerDone, deputyDone := t.holder.Exited(), t.follower.Exited(), t.deputy.Exited() // Exited: false when nil
	// Those that wait first: in FlakyShort the follower is still waiting,
	// and must not take the lease that the holder releases when it stops;
	// with a deputy, whichever of the two does not lead.
	last := t.holder
	for _, p := range []*testenv.Process{t.follower, t.deputy} {
		if p != nil && t.leads(p) {
			last = p
			continue
		}
		p.Stop(stopWait)
	}
	if last != t.holder {
		last.Stop(stopWait)
	}
	t.holder.Stop(stopWait)
	t.stopFillers() // slots.go
	r.HolderExit, r.FollowerExit = exitOf(t.holder, holderDone), exitOf(t.follower, followerDone)
	r.DeputyExit = exitOf(t.deputy, deputyDone)

	if err := t.rec.Poll(); err != nil && r.Err == nil {
		r.Err = err
	}
	r.Procs = t.rec.Procs()
	t.reapLeftovers()
	if t.proxy != nil {
		r.Injected = t.proxy.Counts().Injected
		r.ReleaseAt = t.ops.released()
		t.ops.stop()
		_ = t.proxy.Close()
	}
	if t.deputyProxy != nil {
		r.Injected += t.deputyProxy.Counts().Injected
		_ = t.deputyProxy.Close()
	}
	for who, s := range t.imds {
		if s.Posted() {
			r.Posted = append(r.Posted, who)
		}
		_ = s.Close()
	}
	if b, err := os.ReadFile(filepath.Join(r.Dir, holderID+".log")); err == nil {
		r.RenewFailures = int64(strings.Count(string(b), "lease renewal failed"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cc, err := container.NewClientFromConnectionString(t.env.storage.ConnString, r.Container, nil); err == nil {
		_, _ = cc.Delete(ctx, nil) // the emulator keeps everything in memory
	}
}

// reapLeftovers: once both leaderrun processes have exited, nothing of
// their groups may still run. A leftover is a failure; it is killed by PID.
func (t *trial) reapLeftovers() {
	deadline := time.Now().Add(3 * time.Second)
	for {
		var alive []Proc
		for _, p := range t.res.Procs {
			if testenv.RunningExe(p.PID, t.env.Child) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for _, p := range alive {
			t.failures = append(t.failures, fmt.Sprintf("%s's %s (pid %d) still ran after its leaderrun had exited", p.Owner, p.Role, p.PID))
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		return
	}
}

// leads reports whether p (a follower) runs a child now, by the records.
func (t *trial) leads(p *testenv.Process) bool {
	if p == nil || p.Exited() {
		return false
	}
	for _, owner := range []string{followerID, deputyID} {
		if (owner == followerID) != (p == t.follower) {
			continue
		}
		g, ok := GroupOf(t.rec.Procs(), owner)
		return ok && !g.Ended && time.Since(g.End) < liveWithin
	}
	return false
}

// launch starts leaderrun with args, its output (and its child's) to
// DIR/NAME.log (see testenv.StartLogged).
func (t *trial) launch(name string, env, args []string) (*testenv.Process, error) {
	cmd := exec.Command(t.env.Leaderrun, args...)
	cmd.Env, cmd.Dir = env, t.res.Dir
	return testenv.StartLogged(name, cmd, filepath.Join(t.res.Dir, name+".log"))
}

// has reports whether a process of owner has begun.
func (r *Records) has(owner string) bool {
	for _, k := range r.order {
		if k.owner == owner {
			return true
		}
	}
	return false
}
