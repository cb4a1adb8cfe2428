package leader

// A held run: COMMAND started under an acquired lease and watched until it
// has exited, and only then the lease released (the safety promise).

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/imds"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/runner"
)

// releaseTimeout bounds the release at the end of a held run, which gets a
// fresh context: the run's own may already be done.
const releaseTimeout = 10 * time.Second

// heldRun is one run of COMMAND under an acquired lease. Use: run, once.
type heldRun struct {
	*invocation
	l *lease.Lease

	env        []string
	proc       Process
	startedAt  time.Time // right before COMMAND's start: --max-runtime counts from it
	stopHealth context.CancelFunc
	keptOutput bool // the output is in its blob: older runs' may be pruned (written before uploaded closes)

	happened // while COMMAND ran: lost, unhealthy, steppedDown, timedOut, each set at most once
}

// run keeps the lease, runs COMMAND, stops it when leadership is lost or
// it is unhealthy, and returns what leaderrun exits with. The lease is
// released once, after COMMAND has exited, on every path.
func (h *heldRun) run(ctx context.Context) error {
	keepCtx, stopKeep := context.WithCancel(ctx)
	defer stopKeep()
	h.l.Keep(keepCtx)
	defer h.release() // before stopKeep: the keeper renews until the release
	h.sd.leading(2 * h.elector.Config().RenewInterval)
	h.sd.status(fmt.Sprintf("leader: term %d since %s", h.l.Term, h.l.AcquiredAt.UTC().Format(time.RFC3339)))
	acquired := []any{"lease", exit.Cut(h.l.Name)}
	if h.elector.Config().Slots > 1 {
		acquired = append(acquired, "slot", h.l.Slot)
	}
	h.log.Info("acquired lease", append(acquired, "term", h.l.Term, "identity", exit.Cut(h.l.Identity))...)

	if err := h.start(ctx); err != nil {
		return err
	}
	health, events, endWatch, err := h.watch(ctx)
	if err != nil {
		// The health flags were validated with the others: only a bug gets here.
		h.proc.Stop(h.l.StopBudget)
		<-h.proc.Done()
		return exit.With(exit.Internal, err)
	}
	var overtime <-chan time.Time // --max-runtime: fires once it is reached
	if h.o.MaxRuntime > 0 {
		t := time.NewTimer(time.Until(h.startedAt.Add(h.o.MaxRuntime)))
		defer t.Stop()
		overtime = t.C
	}
	h.loop(health, events, overtime)
	endWatch()
	return h.finish(ctx)
}

// start records the run's start and starts COMMAND, with the kill deadline
// in force in its guard from the first instant: the guard kills the group
// by itself at that deadline unless a renewal moves it, which covers a
// leaderrun that is alive but cannot act (stopped, starved).
func (h *heldRun) start(ctx context.Context) error {
	l := h.l
	if err := l.RecordRunStart(ctx); err != nil {
		// The write may have landed with its answer lost: nothing runs,
		// so the claim and the start are taken back as for any run that
		// never started.
		return h.unused(storageCode(err), fmt.Errorf("recording the run's start: %w", err))
	}
	h.env = append(withoutNotify(os.Environ()),
		"LEADERRUN_LEASE="+l.Name,
		"LEADERRUN_LEASE_URL="+l.URL,
		"LEADERRUN_LEASE_ID="+l.ID,
		"LEADERRUN_TERM="+strconv.FormatInt(l.Term, 10),
		"LEADERRUN_IDENTITY="+l.Identity,
		"LEADERRUN_SLOT="+strconv.Itoa(l.Slot),
		ExportedVar+"="+exportedMarker(map[string]string{"LEADERRUN_LEASE": l.Name, "LEADERRUN_IDENTITY": l.Identity}),
	)
	h.env = append(h.env, runContext(l, h.o)...)
	// COMMAND never starts on a lease lost or about to be: leaderrun may
	// have been stopped or starved since the acquire handed it over.
	select {
	case <-l.Lost():
		return h.unused(exit.Lost, fmt.Errorf("leadership of %s was lost before the command started: %s", exit.Quote(l.Name), lossText(l.LostErr(), nil)))
	default:
		if !time.Now().Before(l.StopAt()) {
			return h.unused(exit.Lost, fmt.Errorf("leadership of %s was lost before the command started (no renewal succeeded before the stop deadline)", exit.Quote(l.Name)))
		}
	}
	h.startedAt = time.Now()
	p, err := h.hs.start(h.env, runDeadlines{h})
	if errors.Is(err, errPastStopDeadline) {
		return h.unused(exit.Lost, fmt.Errorf("leadership of %s was lost before the command started (%w)", exit.Quote(l.Name), err))
	}
	if err != nil {
		// Looked up before acquiring: the command changed since, or its
		// guard could not start.
		return h.unused(execCode(err), err)
	}
	h.proc = p
	h.log.Debug("command started", "pid", p.Pid(), "command", h.o.Argv[0])
	h.mon.started(l)
	return nil
}

// unused ends a run whose COMMAND never started (its lease lost first, or
// COMMAND could not be started): nothing ran, so the claim is taken back
// (a warning if the lease no longer allows it: lease.ReleaseUnused) and
// the lease given up; another host runs it. leaderrun exits code.
func (h *heldRun) unused(code int, why error) error {
	rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := h.l.ReleaseUnused(rctx); err != nil { // the release deferred by run then does nothing
		h.log.Warn("could not release the lease; it expires by itself", "error", err, "within", h.l.Duration)
	}
	return exit.With(code, fmt.Errorf("%w; nothing ran", why))
}

// watch starts the health check, which reports a failure and closes its
// channel once stopped, and with --scheduled-events watchEvents. end stops
// both and returns once no check runs any more.
func (h *heldRun) watch(ctx context.Context) (health <-chan error, events <-chan imds.Event, end func(), err error) {
	hctx, stopHealth := context.WithCancel(ctx)
	hc := h.o.Health
	hc.Env, hc.Logger = h.env, h.log
	if health, err = runner.StartHealth(hctx, hc); err != nil {
		stopHealth()
		return nil, nil, nil, err
	}
	h.stopHealth = stopHealth
	evs := make(chan imds.Event)
	// Not ended with ctx: the loop runs until COMMAND has exited.
	wctx, stopEvents := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	if h.events != nil {
		wg.Go(func() { h.watchEvents(wctx, evs) })
	}
	return health, evs, func() {
		stopEvents()
		stopHealth()
		for range health { // drained: closed once no check runs any more
		}
		wg.Wait()
	}, nil
}

// eventRecheck is how often a leader that is stepping down looks again at
// the pending event: the platform may move NotBefore earlier, or start the
// event, and SIGKILL must still come stepDownMargin before it.
const eventRecheck = time.Second

// watchEvents reports the scheduled event that concerns this VM when one
// appears, and again whenever the pending event may start sooner than the
// one reported last, until ctx ends.
func (h *heldRun) watchEvents(ctx context.Context, out chan<- imds.Event) {
	var last time.Time // StartsBy of the event reported last; zero: none
	for {
		wake := h.events.Appeared() // at once if one is pending already
		if !last.IsZero() {
			wake = nil // reported: look again every eventRecheck
		}
		select {
		case <-wake:
		case <-time.After(eventRecheck):
		case <-ctx.Done():
			return
		}
		ev, ok := h.events.Pending()
		if !ok {
			continue // gone again: wait for the next one
		}
		if by := ev.StartsBy(time.Now()); last.IsZero() || by.Before(last) {
			last = by
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}
}

// killBy is the kill deadline the guard enforces by itself: the lease's,
// or with --max-runtime the end of the grace after it, if that comes first.
// So a COMMAND past its max runtime is killed even while leaderrun cannot
// act (stopped, starved), as one past its lease is.
// runDeadlines are a held run's deadlines as the go-ahead reads them: the
// lease's stop deadline, and the kill deadline (the max runtime's if sooner).
type runDeadlines struct{ h *heldRun }

func (d runDeadlines) StopAt() time.Time { return d.h.l.StopAt() }
func (d runDeadlines) KillBy() time.Time { return d.h.killBy() }

func (h *heldRun) killBy() time.Time {
	k := h.l.KillBy()
	if h.o.MaxRuntime > 0 {
		if r := h.runtimeKillBy(); r.Before(k) {
			return r
		}
	}
	return k
}

// runtimeKillBy is when a COMMAND stopped at its max runtime gets SIGKILL:
// --kill-grace after it.
func (h *heldRun) runtimeKillBy() time.Time {
	return h.startedAt.Add(h.o.MaxRuntime + h.o.Lease.KillGrace)
}

// loop handles what happens until COMMAND has exited: outside signals are
// forwarded, renewals move the guard's kill deadline, and a lost lease, a
// failed health check, a scheduled event for this VM or the max runtime
// (overtime fires) stops COMMAND. What
// happened at once (while leaderrun could not look: stopped, starved) is
// taken in a fixed order, COMMAND's end first, then a lost lease: a run
// repeats the same way (the simulator replays it).
func (h *heldRun) loop(health <-chan error, events <-chan imds.Event, overtime <-chan time.Time) {
	lost := h.l.Lost()
	for {
		select {
		case <-h.proc.Done():
			return
		default:
		}
		select {
		case <-lost:
			lost = nil
			h.stopLost()
			continue
		default:
		}
		select {
		case s := <-h.sigs:
			if s == watchdogSignal {
				h.watchdogFired()
				continue
			}
			h.log.Info("forwarding signal to the command", "signal", s)
			if terminating(s) {
				h.sd.status("stopping: received " + s.String())
			}
			h.proc.HandleSignal(s)
		case <-h.l.RenewedAt():
			if err := h.proc.SetKillDeadline(h.killBy()); err != nil {
				h.log.Warn("could not hand the kill deadline to the guard", "error", err)
			}
			h.sd.renewed()
		case <-lost:
			lost = nil // closed: once is enough
			h.stopLost()
		case err, ok := <-health:
			if !ok {
				health = nil // the check has stopped
				continue
			}
			h.stopUnhealthy(err)
		case ev := <-events:
			h.stepDown(ev)
		case <-overtime:
			overtime = nil
			h.stopOvertime()
		case <-h.proc.Done():
			return
		}
	}
}

// stopLost stops COMMAND because leadership was lost: the stop signal now,
// SIGKILL at the lost lease's kill deadline. Its line is at info level: the
// one line that names the cause comes with the exit (outcome.go).
func (h *heldRun) stopLost() {
	h.stopHealth()
	h.lost = h.l.LostErr()
	grace := time.Until(h.lost.KillBy)
	if grace > 0 {
		h.log.Info("leadership lost; stopping the command", "reason", h.lost.Reason,
			"signal", signalName(h.o.StopSignal), "sigkill_in", grace.Round(time.Millisecond))
	} else {
		// Woken past the kill deadline (a frozen process): no grace is left.
		h.log.Info("leadership lost past the kill deadline; killing the command now", "reason", h.lost.Reason,
			"signal", "SIGKILL", "late_by", (-grace).Round(time.Millisecond))
	}
	h.sd.status("stopping: leadership lost: " + lossText(h.lost, nil))
	h.proc.Stop(grace)
}

// stopOvertime stops COMMAND because it reached --max-runtime, as a lost
// lease stops it (the stop signal now, SIGKILL after --kill-grace) but
// keeping the lease: the keeper renews until the release, after COMMAND's
// processes are gone. If COMMAND is already being stopped (a lost lease, a
// failed health check, a scheduled event), that stop goes on as it is.
func (h *heldRun) stopOvertime() {
	if h.lost != nil || h.unhealthy != nil || h.steppedDown != nil {
		return
	}
	h.timedOut = h.o.MaxRuntime
	h.stopHealth()
	h.log.Info("max runtime reached; stopping the command", "max_runtime", shortDuration(h.o.MaxRuntime),
		"signal", signalName(h.o.StopSignal), "sigkill_in", h.o.Lease.KillGrace)
	h.sd.status("stopping: max runtime reached")
	h.proc.Stop(h.o.Lease.KillGrace)
}

// watchdogFired kills COMMAND's group at once, because systemd's watchdog
// fired: leaderrun stopped pinging it, so it was wedged or stopped, and
// whatever COMMAND was asked before is overtaken. Its one line, at error
// level, is logged now; leaderrun then ends by the watchdog's signal.
func (h *heldRun) watchdogFired() {
	if h.watchdog {
		return
	}
	h.watchdog = true
	h.stopHealth()
	h.log.Error("the systemd watchdog fired (SIGABRT): killing the command's process group now; leaderrun ends by SIGABRT",
		"lease", exit.Cut(h.l.Name), "term", h.l.Term)
	h.sd.status("stopping: the systemd watchdog fired")
	h.proc.Stop(0)
}

// pendingWatchdog takes the signals that came with COMMAND's end, which
// the loop did not look at: the watchdog's still counts (a leaderrun
// stopped, then continued by systemd along with the signal). The others
// are too late to act on.
func (h *heldRun) pendingWatchdog() {
	for !h.watchdog {
		select {
		case s, ok := <-h.sigs:
			if !ok {
				return
			}
			if s == watchdogSignal {
				h.watchdogFired()
			}
		default:
			return
		}
	}
}

// stopUnhealthy stops COMMAND because its health check failed, unless
// leadership was lost first, or COMMAND is already being stopped for
// another reason.
func (h *heldRun) stopUnhealthy(err error) {
	if h.lost != nil || h.steppedDown != nil || h.timedOut != 0 {
		return
	}
	if !errors.As(err, &h.unhealthy) {
		h.unhealthy = &runner.UnhealthyError{Last: err.Error()}
	}
	u := h.unhealthy
	h.log.Info("the health check failed; stopping the command and giving up the lease",
		"failures", u.Failures, "last", u.Last, "output", u.Output,
		"signal", signalName(h.o.StopSignal), "sigkill_in", h.l.StopBudget)
	h.sd.status("stopping: health check failed")
	h.proc.Stop(h.l.StopBudget)
}

// stepDown stops COMMAND because a scheduled event concerns this VM, as an
// outside stop request would: the stop signal now, SIGKILL at
// stepDownKillBy; the keeper renews until the release. If leadership was
// lost or the health check failed first, COMMAND is already being stopped
// for that: the event only brings SIGKILL forward if it is due sooner.
func (h *heldRun) stepDown(ev imds.Event) {
	grace := time.Until(stepDownKillBy(ev, time.Now(), h.o.Lease.KillGrace))
	if h.steppedDown != nil {
		h.log.Info("the scheduled event moved sooner; SIGKILL comes forward", "sigkill_in", max(grace, 0).Round(time.Millisecond))
		h.proc.Stop(grace)
		return
	}
	if h.lost == nil && h.unhealthy == nil && h.timedOut == 0 {
		h.steppedDown = &ev
		h.stopHealth()
		h.log.Info("stepping down: stopping the command before the scheduled event",
			"signal", signalName(h.o.StopSignal), "sigkill_in", max(grace, 0).Round(time.Millisecond))
		at := ev.NotBeforeText
		if at == "" {
			at = "any moment"
		}
		h.sd.status(fmt.Sprintf("stepping down: %s at %s", ev.EventType, at))
	}
	h.proc.Stop(grace) // grace <= 0: SIGKILL now
}

// finish decides the outcome once COMMAND has exited, and records the
// run's end when the lease is still held to write it.
func (h *heldRun) finish(ctx context.Context) error {
	h.pendingWatchdog()
	hap := h.happened
	hap.lease, hap.result = h.l.Name, h.proc.Result()
	if hap.lost == nil {
		// The loop may have seen COMMAND's end first.
		select {
		case <-h.l.Lost():
			hap.lost = h.l.LostErr()
		default:
			// Stopped or starved, leaderrun may wake to find that the guard
			// killed COMMAND at the deadline before its keeper had a turn.
			hap.pastKillDeadline = !time.Now().Before(h.l.KillBy())
		}
	}
	if hap.timedOut == 0 && h.o.MaxRuntime > 0 && hap.result.Signal == syscall.SIGKILL && !time.Now().Before(h.runtimeKillBy()) {
		// Likewise at the max runtime's kill deadline: the guard killed
		// COMMAND past its max runtime while leaderrun could not act.
		hap.timedOut = h.o.MaxRuntime
	}
	if hap.lost != nil && hap.lost.Cause == lease.LostBroken {
		hap.drained = h.drainPause(ctx)
	}
	out := decideOutcome(hap)
	code := hap.result.Code() // the run's end record: COMMAND's status
	switch {
	case out.kind == outcomeTimedOut:
		code = out.code // recorded as timed out: 124, whatever signal ended it
	case !out.recordEnd:
		code = out.code // not recorded (the lease is gone): the kept output says what leaderrun exits with
	}
	// COMMAND's processes are gone: its output is complete, and its
	// upload, beside the end's record, holds the release up by
	// outputBudget at most, lost lease or not.
	kept, uploaded := h.uploadOutput(code)
	defer func() { <-uploaded }()
	h.mon.ended(h.l, out.code, kept)
	if out.kind == outcomeExited || out.kind == outcomeSignalled {
		args := []any{"code", out.code, "term", h.l.Term}
		if sig := hap.result.Signal; sig != 0 {
			args = append(args, "signal", signalName(sig))
		}
		h.log.Info("command exited", args...)
	}
	if !out.recordEnd {
		return out.exitErr()
	}
	h.recordEnd(ctx, code)
	// --once-per-host: this host's done marker after COMMAND exited with
	// status 0, by itself or when asked to step down for a scheduled event,
	// while the lease is still held: the release comes after it, so nobody
	// can take the slot before the marker exists.
	if h.o.OncePerHost != "" && code == exit.OK && (out.kind == outcomeExited || out.kind == outcomeSteppedDown) {
		if err := h.l.MarkDone(ctx, h.o.OncePerHost); err != nil {
			h.log.Warn("could not record that this host is done; it will run again", "host", h.o.OncePerHost, "error", err)
		}
	}
	return out.exitErr()
}

// What keeping COMMAND's output (--keep-output) may add to the release:
// the wait for its last bytes once its processes are gone (they are in the
// pipes, or still being passed on to a slow reader), and the upload, all
// within outputBudget of COMMAND's end. Its pruning comes after the
// release, within outputBudget of its own, beside the last ping.
const (
	outputBudget = 2 * time.Second
	outputDrain  = 500 * time.Millisecond
)

// uploadOutput takes what was kept of COMMAND's output (nil when nothing
// is kept) and uploads it to the run's helper blob in the background,
// with the run's record and code; uploaded is closed when that is over,
// outputBudget after COMMAND's end at the latest. A failure costs one
// WARNING. COMMAND's processes are gone: never call it before.
func (h *heldRun) uploadOutput(code int) (kept []byte, uploaded <-chan struct{}) {
	done := make(chan struct{})
	if h.out == nil {
		close(done)
		return nil, done
	}
	deadline := time.Now().Add(outputBudget)
	k := h.out.Close(outputDrain)
	go func() {
		defer close(done)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		if err := h.l.KeepOutput(ctx, code, k.Bytes, k.Written); err != nil {
			h.log.Warn("could not keep the command's output in storage; leaderrun's exit status is unchanged",
				"blob", lease.OutputBlob(h.l.Name, h.l.Slot, h.l.Term), "error", err)
			return
		}
		h.keptOutput = true
		h.log.Debug("kept the command's output", "blob", lease.OutputBlob(h.l.Name, h.l.Slot, h.l.Term), "bytes", len(k.Bytes), "written", k.Written)
	}()
	return k.Bytes, done
}

// pruneOutputs deletes, in the background, the outputs of this slot's runs
// older than those its history keeps, once this run's is kept; the channel
// is closed when that is over, outputBudget from now at the latest. Call
// it after the release: it never holds the lease up.
func (h *heldRun) pruneOutputs() <-chan struct{} {
	done := make(chan struct{})
	if !h.keptOutput {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), outputBudget)
		defer cancel()
		if err := h.l.PruneOutputs(ctx); err != nil {
			h.log.Debug("could not delete the outputs of older runs; the next run tries again", "error", err)
		}
	}()
	return done
}

// drainReadTimeout bounds the one read of the pause marker after a break.
const drainReadTimeout = 2 * time.Second

// drainPause tells a drain from a plain break, once COMMAND has exited: one
// read of the pause marker, which `leaderrun pause --drain` writes (saying
// drain) right before it breaks the lease. The pause, if in force and
// saying drain; nil if not, or if it cannot be read (then the line says
// "broken by an operator", which is true of a drain too).
func (h *heldRun) drainPause(ctx context.Context) *lease.Pause {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainReadTimeout)
	defer cancel()
	p, date, err := h.o.Client.ReadPause(rctx)
	if err != nil || p == nil || !p.Drain || !p.Active(date) {
		if err != nil {
			h.log.Debug("could not read the pause marker to tell a drain from a break", "error", err)
		}
		return nil
	}
	return p
}

// ExportedVar names, in COMMAND's environment, the variables that leaderrun
// set itself among those a leaderrun also reads as inputs (LEADERRUN_LEASE,
// LEADERRUN_IDENTITY), with the values it gave them, in URL query encoding:
// "LEADERRUN_IDENTITY=vm-1%3A4242&LEADERRUN_LEASE=nightly". A variable it
// only passed on unchanged (the operator's LEADERRUN_IDENTITY) is not
// named. A leaderrun started by COMMAND (nested) does not take a variable
// that still holds the value named there as its own (see SetByLeaderrun).
const ExportedVar = "LEADERRUN_EXPORTED"

// exportedMarker is ExportedVar's value for the values leaderrun exports
// (name → value): those that differ from leaderrun's own environment.
func exportedMarker(exported map[string]string) string {
	set := url.Values{}
	for name, v := range exported {
		if old, ok := os.LookupEnv(name); !ok || old != v {
			set.Set(name, v)
		}
	}
	return set.Encode()
}

// SetByLeaderrun reports whether the environment variable name holds the
// value that the leaderrun this process runs under (as COMMAND, or below
// it) set itself, as ExportedVar says: a nested leaderrun must not take it
// as its own input. A value its caller set on purpose (another one) is not.
func SetByLeaderrun(name string) bool {
	v, ok := os.LookupEnv(name)
	if !ok {
		return false
	}
	set, err := url.ParseQuery(os.Getenv(ExportedVar))
	return err == nil && set.Has(name) && set.Get(name) == v
}

func (h *heldRun) recordEnd(ctx context.Context, code int) {
	if err := h.l.RecordRunEnd(ctx, code); err != nil {
		h.log.Warn("could not record the run's end in the lease metadata", "error", err)
	}
}

// release gives the lease up, from a fresh time-limited context; it is
// deferred once by run, so it comes after COMMAND has exited.
func (h *heldRun) release() {
	rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := h.l.Release(rctx); err != nil {
		h.log.Warn("could not release the lease; it expires by itself", "error", err, "within", h.l.Duration)
		return
	}
	h.log.Debug("released lease", "term", h.l.Term)
}

// shortDuration is d as a person writes it: "1h", "1h30m", "90s" rather
// than Go's "1h0m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
