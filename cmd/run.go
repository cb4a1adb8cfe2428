package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/runner"
)

// runOptions are the root command's: run COMMAND while holding the lease.
type runOptions struct {
	loc           locationOptions
	identity      string
	noWait        bool
	timeout       time.Duration
	conflictCode  int
	leaseDuration durationValue
	renewInterval time.Duration
	pollInterval  time.Duration
	killSignal    string
	killGrace     time.Duration
	oncePer       time.Duration
	health        runner.HealthConfig

	argv   []string
	signal syscall.Signal
}

func (o *runOptions) addFlags(fs *pflag.FlagSet) {
	o.loc.addFlags(fs)
	o.leaseDuration = durationValue(15 * time.Second)
	fs.StringVar(&o.identity, "identity", "", "who holds the lease, recorded in the blob's metadata (env LEADERRUN_IDENTITY; default HOSTNAME:PID)")
	fs.BoolVarP(&o.noWait, "no-wait", "n", false, "try once; if the lease is held, exit with the conflict code")
	fs.DurationVarP(&o.timeout, "timeout", "w", 0, "give up waiting for the lease after this long (0 = wait forever)")
	fs.IntVarP(&o.conflictCode, "conflict-exit-code", "E", exitConflict, "exit status when the lease was not acquired")
	fs.Var(&o.leaseDuration, "lease-duration", "lease duration, whole seconds from 15s to 60s (env LEADERRUN_LEASE_DURATION)")
	fs.DurationVar(&o.renewInterval, "renew-interval", 0, "how often the holder renews (default lease-duration/3, at most lease-duration/2)")
	fs.DurationVar(&o.pollInterval, "poll-interval", 2*time.Second, "how often a waiting follower reads the lease (±20% jitter)")
	fs.StringVar(&o.killSignal, "kill-signal", "TERM", "the signal that asks COMMAND to stop")
	fs.DurationVar(&o.killGrace, "kill-grace", 10*time.Second, "after the stop signal, how long before SIGKILL")
	fs.DurationVar(&o.oncePer, "once-per", 0, "skip (exit 0) if a run started less than this long ago, by the storage service's clock")
	fs.StringVar(&o.health.Cmd, "health-cmd", "", "while COMMAND runs, check its health with this shell command (sh -c); unhealthy: stop COMMAND, release, exit 77")
	fs.DurationVar(&o.health.Interval, "health-interval", runner.DefaultHealthInterval, "time between health checks")
	fs.DurationVar(&o.health.Timeout, "health-timeout", runner.DefaultHealthTimeout, "a health check running longer is killed and counts as failed")
	fs.IntVar(&o.health.Retries, "health-retries", runner.DefaultHealthRetries, "consecutive failed checks that make COMMAND unhealthy")
	fs.DurationVar(&o.health.StartPeriod, "health-start-period", 0, "failed checks in this first period do not count")
}

// args validates the positional arguments: COMMAND after "--". Without any,
// the usage is printed and leaderrun exits 64.
func (o *runOptions) args(c *cobra.Command, args []string) error {
	if len(args) == 0 && c.ArgsLenAtDash() < 0 {
		c.SetOut(c.ErrOrStderr())
		_ = c.Usage()
	}
	argv, err := splitCommand(c, args)
	if err != nil {
		return err
	}
	o.argv = argv
	return nil
}

func (o *runOptions) complete(c *cobra.Command, _ []string) error {
	fs := c.Flags()
	if err := o.loc.complete(fs); err != nil {
		return err
	}
	if err := envDefaults(fs, map[string]string{
		"identity":       "LEADERRUN_IDENTITY",
		"lease-duration": "LEADERRUN_LEASE_DURATION",
	}); err != nil {
		return err
	}
	if o.identity == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		o.identity = host + ":" + strconv.Itoa(os.Getpid())
	}
	if o.conflictCode < 0 || o.conflictCode > 255 {
		return usagef("invalid --conflict-exit-code %d: use 0 to 255", o.conflictCode)
	}
	for name, d := range map[string]time.Duration{
		"--timeout": o.timeout, "--renew-interval": o.renewInterval, "--poll-interval": o.pollInterval,
		"--kill-grace": o.killGrace, "--once-per": o.oncePer,
	} {
		if d < 0 {
			return usagef("invalid %s %s: must not be negative", name, d)
		}
	}
	if fs.Changed("poll-interval") && o.pollInterval == 0 {
		return usagef("invalid --poll-interval 0: a follower must not poll in a busy loop")
	}
	if err := o.health.Validate(); err != nil {
		return usagef("invalid --health-* flags: %v", err)
	}
	sig, err := parseSignal(o.killSignal)
	if err != nil {
		return err
	}
	o.signal = sig
	return nil
}

// leaseConfig is the lease's part of the options.
func (o *runOptions) leaseConfig(log hclog.Logger) lease.Config {
	return lease.Config{
		Duration:      time.Duration(o.leaseDuration),
		RenewInterval: o.renewInterval,
		KillGrace:     o.killGrace,
		PollInterval:  o.pollInterval,
		Identity:      o.identity,
		Version:       versionShort(),
		Logger:        log,
	}
}

// parseSignal accepts TERM, SIGTERM, sigterm or 15.
func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n >= 65 || unix.SignalName(syscall.Signal(n)) == "" {
			return 0, usagef("invalid --kill-signal %q: no such signal", s)
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig := unix.SignalNum(name)
	if sig == 0 {
		return 0, usagef("invalid --kill-signal %q: use a name such as TERM, INT, HUP or a number", s)
	}
	return sig, nil
}

func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(sig))
}

// durationValue is a time.Duration flag that also takes a bare number of
// seconds ("30"), as LEADERRUN_LEASE_DURATION=30 would be written.
type durationValue time.Duration

func (d *durationValue) String() string { return time.Duration(*d).String() }
func (d *durationValue) Type() string   { return "duration" }
func (d *durationValue) Set(s string) error {
	if n, err := strconv.Atoi(s); err == nil {
		*d = durationValue(time.Duration(n) * time.Second)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

// outsideSignals are the signals leaderrun handles: while waiting, a
// terminating one ends the wait; while COMMAND runs, all are passed to the
// runner, which forwards them to COMMAND's process group.
var outsideSignals = []os.Signal{
	syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH,
}

func terminating(sig os.Signal) bool {
	switch sig {
	case syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT:
		return true
	}
	return false
}

// runLeader waits for the lease, runs COMMAND while holding it, stops COMMAND
// before the lease could pass to anyone else, and releases the lease after
// COMMAND has exited.
func runLeader(ctx context.Context, a *app, o *runOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	log := a.log
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, outsideSignals...)
	defer signal.Stop(sigs)

	client, err := o.loc.client(log)
	if err != nil {
		return err
	}
	elector, err := lease.NewElector(client, o.leaseConfig(log))
	if err != nil {
		return storageExit(err)
	}
	sd := newNotifier(log)
	sd.status("acquiring lease " + o.loc.lease)
	sd.start()
	defer sd.close()

	hs := &headStart{log: log, cfg: runner.Config{
		Argv:       o.argv,
		StopSignal: o.signal,
		KillGrace:  o.killGrace,
		Logger:     log,
	}}
	defer hs.discard()
	l, err := waitForLease(ctx, a, o, elector, sd, sigs, hs)
	if err != nil {
		return err
	}
	if l == nil {
		return nil // skipped by --once-per
	}
	return runHeld(ctx, a, o, l, elector.Config().RenewInterval, sd, sigs, hs)
}

// headStart starts COMMAND's guard (runner.Prepare) right before each
// acquire request, so that the guard's own start, a whole process's,
// overlaps the storage round trips instead of following them. COMMAND
// itself starts only once the lease is held. The guard is discarded when
// the wait for a held lease begins, and when leaderrun ends without
// running COMMAND.
type headStart struct {
	log      hclog.Logger
	cfg      runner.Config
	prepared *runner.Prepared
	failed   bool // Prepare failed: start from scratch, which reports why
}

func (h *headStart) prepare() {
	if h.prepared != nil || h.failed {
		return
	}
	p, err := runner.Prepare(h.cfg)
	if err != nil {
		// A command that cannot be run is reported once the lease is held,
		// with its run recorded, as without a head start.
		h.failed = true
		h.log.Debug("no head start for the command", "error", err)
		return
	}
	h.prepared = p
}

func (h *headStart) discard() {
	if h.prepared != nil {
		h.prepared.Discard()
		h.prepared = nil
	}
}

// start starts COMMAND with env and the kill deadline already in force:
// the prepared guard if there is one, otherwise (or if it has died) a new
// one.
func (h *headStart) start(env []string, killBy time.Time) (*runner.Process, error) {
	if p := h.prepared; p != nil {
		h.prepared = nil
		err := p.SetKillDeadline(killBy)
		if err == nil {
			var proc *runner.Process
			if proc, err = p.Launch(env); err == nil {
				return proc, nil
			}
		}
		p.Discard()
		h.log.Warn("the command's prepared guard failed; starting it anew", "error", err)
	}
	cfg := h.cfg
	cfg.Env = env
	proc, err := runner.Start(cfg)
	if err != nil {
		return nil, err
	}
	if err := proc.SetKillDeadline(killBy); err != nil {
		h.log.Warn("could not hand the kill deadline to the guard", "error", err)
	}
	return proc, nil
}

// waitForLease acquires the lease; a terminating signal ends the wait at
// once. It returns a nil lease when --once-per skips the run.
func waitForLease(ctx context.Context, a *app, o *runOptions, e *lease.Elector, sd *notifier, sigs <-chan os.Signal, hs *headStart) (*lease.Lease, error) {
	log := a.log
	waitCtx, cancelWait := context.WithCancel(ctx)
	var waitSig syscall.Signal
	waitDone := make(chan struct{})
	go func() {
		defer close(waitDone)
		for {
			select {
			case s := <-sigs:
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
	l, err := e.Acquire(waitCtx, lease.WaitOptions{
		NoWait:  o.noWait,
		Timeout: o.timeout,
		OncePer: o.oncePer,
		OnTry:   hs.prepare,
		OnWait: func(p *lease.Properties) {
			hs.discard()
			log.Info("waiting for the lease", "lease", o.loc.lease, "holder", p.Holder, "term", p.Term)
			sd.waiting()
			sd.status("waiting: held by " + holderText(p.Holder, p.AcquiredAt))
		},
	})
	cancelWait()
	<-waitDone
	var skip *lease.SkipError
	switch {
	case errors.As(err, &skip):
		log.Info("skipped: a run started within the --once-per window", "window", o.oncePer,
			"last_run_by", skip.Holder, "last_run_start", skip.Start.UTC().Format(time.RFC3339))
		return nil, nil
	case err != nil:
		return nil, acquireExit(err, waitSig, o)
	}
	return l, nil
}

// runHeld runs COMMAND under an acquired lease and releases it at the end.
func runHeld(ctx context.Context, a *app, o *runOptions, l *lease.Lease, renewInterval time.Duration, sd *notifier, sigs <-chan os.Signal, hs *headStart) error {
	log := a.log
	keepCtx, stopKeep := context.WithCancel(ctx)
	defer stopKeep()
	l.Keep(keepCtx)
	sd.leading(2 * renewInterval)
	sd.status(fmt.Sprintf("leader: term %d since %s", l.Term, l.AcquiredAt.UTC().Format(time.RFC3339)))
	log.Info("acquired lease", "lease", l.Name, "term", l.Term, "identity", l.Identity)

	release := func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.Release(rctx); err != nil {
			log.Warn("could not release the lease; it expires by itself", "error", err, "within", time.Duration(o.leaseDuration))
			return
		}
		log.Debug("released lease", "term", l.Term)
	}

	if err := l.RecordRunStart(ctx); err != nil {
		release()
		return storageExit(fmt.Errorf("recording the run's start: %w", err))
	}
	env := append(withoutNotify(os.Environ()),
		"LEADERRUN_LEASE="+l.Name,
		"LEADERRUN_LEASE_URL="+l.URL,
		"LEADERRUN_LEASE_ID="+l.ID,
		"LEADERRUN_TERM="+strconv.FormatInt(l.Term, 10),
		"LEADERRUN_IDENTITY="+l.Identity,
	)
	// The guard kills the group by itself at the kill deadline unless a
	// renewal moves it: this covers a leaderrun that is alive but cannot
	// act (stopped, starved).
	p, err := hs.start(env, l.KillBy())
	if err != nil {
		code := exitNotExec
		var ee *runner.ExecError
		if errors.As(err, &ee) {
			code = ee.Code
		}
		recordEnd(ctx, a, l, code)
		release()
		return exitWith(code, err)
	}
	log.Debug("command started", "pid", p.Pid(), "command", o.argv[0])
	setDeadline := func() {
		if err := p.SetKillDeadline(l.KillBy()); err != nil {
			log.Warn("could not hand the kill deadline to the guard", "error", err)
		}
	}

	hctx, stopHealth := context.WithCancel(ctx)
	defer stopHealth()
	hc := o.health
	hc.Env, hc.Logger = env, log
	health, err := runner.StartHealth(hctx, hc)
	if err != nil {
		// Validated with the flags: only a bug gets here.
		p.Stop(l.StopBudget)
		<-p.Done()
		release()
		return exitWith(exitInternal, err)
	}
	healthCh := health

	var (
		lost      *lease.LostError
		unhealthy *runner.UnhealthyError
	)
	lostCh := l.Lost()
run:
	for {
		select {
		case s := <-sigs:
			log.Info("forwarding signal to the command", "signal", s)
			if terminating(s) {
				sd.status("stopping: received " + s.String())
			}
			p.HandleSignal(s)
		case <-l.RenewedAt():
			setDeadline()
			sd.renewed()
		case err, ok := <-healthCh:
			healthCh = nil
			if !ok || lost != nil {
				continue
			}
			if !errors.As(err, &unhealthy) {
				unhealthy = &runner.UnhealthyError{Last: err.Error()}
			}
			log.Error("the health check failed; stopping the command and giving up the lease",
				"failures", unhealthy.Failures, "last", unhealthy.Last, "output", unhealthy.Output,
				"signal", signalName(o.signal), "sigkill_in", l.StopBudget)
			sd.status("stopping: health check failed")
			p.Stop(l.StopBudget)
		case <-lostCh:
			lostCh = nil
			stopHealth()
			lost = l.LostErr()
			grace := time.Until(lost.KillBy)
			if grace > 0 {
				log.Error("leadership lost; stopping the command", "reason", lost.Reason,
					"signal", signalName(o.signal), "sigkill_in", grace.Round(time.Millisecond))
			} else {
				// Woken past the kill deadline (a frozen process): no grace is left.
				log.Error("leadership lost past the kill deadline; killing the command now", "reason", lost.Reason,
					"signal", "SIGKILL", "late_by", (-grace).Round(time.Millisecond))
			}
			sd.status(fmt.Sprintf("stopping: leadership lost (%v)", lost.Reason))
			p.Stop(grace)
		case <-p.Done():
			break run
		}
	}
	stopHealth()
	<-health // no check runs any more
	if lost == nil {
		lost = lostMeanwhile(l)
	}
	if lost != nil && unhealthy == nil {
		release()
		return exitWith(exitLost, fmt.Errorf("leadership of %q was lost while the command ran (%v); the command was stopped", l.Name, lost.Reason))
	}
	res := p.Result()
	if unhealthy != nil {
		recordEnd(ctx, a, l, res.Code())
		release()
		return exitWith(exitUnhealthy, fmt.Errorf("the health check failed %d times in a row (%s); the command was stopped and the lease released", unhealthy.Failures, unhealthy.Last))
	}
	log.Info("command exited", "code", res.Code(), "term", l.Term)
	recordEnd(ctx, a, l, res.Code())
	release()
	if res.Code() != 0 {
		return exitWith(res.Code(), nil)
	}
	return nil
}

// lostMeanwhile tells whether the lease was lost by the time the command
// ended, although the loop saw the end first: the keeper has said so, or
// the kill deadline has passed (a leaderrun that was stopped or starved
// wakes to find the guard has killed the command at that deadline, before
// its keeper has had a turn).
func lostMeanwhile(l *lease.Lease) *lease.LostError {
	select {
	case <-l.Lost():
		return l.LostErr()
	default:
	}
	if killBy := l.KillBy(); !time.Now().Before(killBy) {
		return &lease.LostError{
			Reason: errors.New("no renewal succeeded before the kill deadline: leaderrun could not act (stopped or starved), and the guard killed the command"),
			StopAt: killBy, KillBy: killBy,
		}
	}
	return nil
}

func recordEnd(ctx context.Context, a *app, l *lease.Lease, code int) {
	if err := l.RecordRunEnd(ctx, code); err != nil {
		a.log.Warn("could not record the run's end in the lease metadata", "error", err)
	}
}
