package leader

// A run: its options, Run, the whole flow of one run, the exit statuses of
// storage errors and of a COMMAND that cannot start, and the signals from
// outside that it handles.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/imds"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/monitor"
	"github.com/leaderrun/leaderrun/runner"
	"github.com/leaderrun/leaderrun/schedule"
)

// Options are one run's, checked by the command line before Run: where the
// lease is and how it is held, COMMAND and how it is stopped, when to skip,
// and whom to tell.
type Options struct {
	Client *lease.Blob // the lease blob (NAME, slot 0)
	// Lease is the lease's configuration: duration, renewal, polling,
	// identity, slots, and COMMAND's kill grace. Its Logger is the run's.
	Lease lease.Config

	Argv       []string // COMMAND, looked up on PATH
	StopSignal syscall.Signal
	Health     runner.HealthConfig // no check when Cmd is ""
	// MaxRuntime (--max-runtime) stops COMMAND this long after its start,
	// as a lost lease would but keeping the lease until it is dead, and
	// makes leaderrun exit 124; 0: no limit.
	MaxRuntime time.Duration

	// DeputyPoll (--deputy-poll-interval): how often a waiting follower
	// that holds the deputy's place reads the lease; 0: no deputy.
	DeputyPoll time.Duration
	// ReadyCmd (--ready-cmd), if set, is run with sh -c, for ReadyTimeout
	// at most, before the first request and once per poll while waiting:
	// while it fails, this host takes neither the deputy's place nor the
	// lease. CheckReady, if set, is asked instead (a simulation's).
	ReadyCmd     string
	ReadyTimeout time.Duration
	CheckReady   func(ctx context.Context) error

	NoWait         bool          // -n: do not wait for a held lease
	Timeout        time.Duration // -w: 0 waits for ever
	ConflictCode   int           // -E: the status when the lease was not acquired
	StorageTimeout time.Duration // without Timeout: how long storage may fail
	Splay          time.Duration // a random wait in [0, Splay) before the first request

	OncePer     time.Duration // --once-per; 0: off
	Once        bool          // --once
	OncePerHost string        // --once-per-host: this host's name; "": off
	// Schedule (--schedule) runs the occurrence due, at most
	// StartingDeadline old (0: no limit); nil: not scheduled.
	Schedule         *schedule.Schedule
	StartingDeadline time.Duration
	// Retries (--retries) runs an occurrence whose attempt failed again,
	// at most Retries more times, RetryDelay after the failed attempt's
	// end at the earliest; 0: never.
	Retries    int
	RetryDelay time.Duration

	// Events is the metadata service's client that --scheduled-events
	// watches for events that concern this VM; nil: not watched.
	Events *imds.Client

	Pinger      *monitor.Pinger // nil: no pings
	MetricsFile string          // "": no metrics file
	// KeepOutput (--keep-output) keeps the last this many bytes of
	// COMMAND's stdout and stderr, for the end ping's body and a helper
	// blob of the run (lease.Lease.KeepOutput); 0: none. Kept only when
	// neither Stdout nor Stderr is a terminal (runner.Output).
	KeepOutput int
	// Stdout and Stderr are where COMMAND's output goes; nil: leaderrun's.
	Stdout, Stderr *os.File

	// Launcher starts COMMAND; nil: real processes (runner). Signals are
	// the signals from outside; nil: this process's own. A simulation of
	// the whole flow sets both.
	Launcher Launcher
	Signals  <-chan os.Signal
}

// invocation is what the wait (wait.go) and the held run (held.go) share.
type invocation struct {
	log     hclog.Logger
	o       *Options
	elector *lease.Elector
	sd      *notifier
	sigs    <-chan os.Signal
	hs      *headStart
	events  *imds.Watcher // nil without --scheduled-events
	mon     *runMonitor
	out     *runner.Output // nil: COMMAND's output is not kept
}

// Run waits for the lease, runs COMMAND while holding it, stops COMMAND
// before the lease could pass to anyone else, and releases the lease after
// COMMAND has exited; it returns nil or an error carrying the exit status
// (exit.Code). A COMMAND that cannot be run exits 127 or 126 before storage
// is touched: nothing is created, acquired or recorded.
func Run(ctx context.Context, o Options) error {
	log := o.Lease.Logger
	if log == nil {
		log = hclog.NewNullLogger()
		o.Lease.Logger = log
	}
	sigs := o.Signals
	if sigs == nil {
		own := make(chan os.Signal, 8)
		if handled := handledSignals(); len(handled) > 0 { // none would mean all
			signal.Notify(own, handled...)
			defer signal.Stop(own)
		}
		// A log line to a stderr whose reader has gone (`2>&1 | head`, a
		// dropped ssh) must not kill leaderrun by SIGPIPE while COMMAND
		// runs: caught (not ignored, so that COMMAND keeps the default),
		// the write just fails. Never stopped: the last log line comes
		// after Run returns.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
		sigs = own
	}
	if o.Launcher == nil {
		o.Launcher = processes{}
	}

	elector, err := lease.NewElector(o.Client, o.Lease)
	if err != nil {
		return StorageExit(err)
	}
	if err := o.Launcher.Lookup(o.Argv[0]); err != nil {
		return exit.With(execCode(err), fmt.Errorf("%w; lease %s not acquired, nothing recorded", err, exit.Quote(o.Client.Name())))
	}
	mon := newRunMonitor(log, &o)
	sd := newNotifier(log)
	sd.status("acquiring lease " + o.Client.Name())
	sd.start()
	defer sd.close()
	events, stopEvents, err := startEvents(ctx, log, o.Events)
	if err != nil {
		return err
	}
	defer stopEvents()

	hs := &headStart{log: log, launcher: o.Launcher, cfg: runner.Config{Argv: o.Argv, StopSignal: o.StopSignal, KillGrace: o.Lease.KillGrace, Logger: log,
		Stdout: o.Stdout, Stderr: o.Stderr}}
	defer hs.discard()
	out := keepOutput(log, &o)
	if out != nil {
		defer out.Close(0) // the held run closed it; or nothing ran
		hs.cfg.Stdout, hs.cfg.Stderr = out.Stdout(), out.Stderr()
	}
	inv := &invocation{log: log, o: &o, elector: elector, sd: sd, sigs: sigs, hs: hs, events: events, mon: mon, out: out}
	l, err := inv.forLease(ctx)
	if err != nil {
		if code, ok := exit.Code(err); ok && code == o.ConflictCode {
			mon.invoked() // held by another host: nothing ran here
		}
		return err
	}
	if l == nil {
		mon.invoked()
		return nil // skipped
	}
	h := &heldRun{invocation: inv, l: l}
	err = h.run(ctx) // the lease is released when it returns
	pruned := h.pruneOutputs()
	mon.wait()
	<-pruned
	return err
}

// keepOutput starts keeping COMMAND's output (--keep-output), unless
// leaderrun's stdout or stderr is a terminal: an interactive COMMAND keeps
// its terminal then, and nothing is kept. nil: nothing kept.
func keepOutput(log hclog.Logger, o *Options) *runner.Output {
	if o.KeepOutput <= 0 {
		return nil
	}
	stdout, stderr := cmp.Or(o.Stdout, os.Stdout), cmp.Or(o.Stderr, os.Stderr)
	if runner.Terminal(stdout) || runner.Terminal(stderr) {
		log.Debug("the command's output is not kept: leaderrun's stdout or stderr is a terminal, which the command keeps")
		return nil
	}
	out, err := runner.KeepOutput(o.KeepOutput, stdout, stderr)
	if err != nil {
		log.Warn("the command's output cannot be kept; it goes where it goes, unkept", "error", err)
		return nil
	}
	return out
}

// StorageExit maps an error from the lease package to leaderrun's exit
// status: a configuration it refuses is a usage error (64), anything else is
// storage that is unreachable, unauthorized or refused (69).
func StorageExit(err error) error {
	return exit.With(storageCode(err), err)
}

// storageCode is StorageExit's exit status for err.
func storageCode(err error) int {
	var ce *lease.ConfigError
	if errors.As(err, &ce) {
		return exit.Usage
	}
	return exit.Unavailable
}

// execCode is the exit status for a COMMAND that cannot be started (its
// *runner.ExecError): 127 not found, 126 not executable.
func execCode(err error) int {
	var ee *runner.ExecError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return exit.NotExec
}

// outsideSignals are the signals a run handles: the terminating ones ask
// COMMAND to stop (and end a wait); the others are forwarded as they are.
var (
	terminatingSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}
	outsideSignals     = append(terminatingSignals, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
)

// watchdogSignal is what systemd sends when its watchdog fires
// (WatchdogSignal=, SIGABRT by default): leaderrun stopped pinging, so it
// is wedged or was stopped. A run catches it (unless GOTRACEBACK asks for
// Go's goroutine dump), kills COMMAND's group at once, and ends by it.
const watchdogSignal = syscall.SIGABRT

// handledSignals are the outsideSignals that leaderrun did not inherit
// ignored: Notify would undo an ignored disposition, and nohup's SIGHUP
// must stay ignored, by leaderrun and by COMMAND, which inherits it. And
// the watchdog's signal, unless GOTRACEBACK is set: then Go's own handling
// prints every goroutine's stack, which is what it asks for.
func handledSignals() []os.Signal {
	var out []os.Signal
	for _, s := range outsideSignals {
		if !signal.Ignored(s) {
			out = append(out, s)
		}
	}
	if os.Getenv("GOTRACEBACK") == "" && !signal.Ignored(watchdogSignal) {
		out = append(out, watchdogSignal)
	}
	return out
}

// terminating reports whether sig asks leaderrun to stop.
func terminating(sig os.Signal) bool { return slices.Contains(terminatingSignals, sig) }

// signalName is a signal's name as the shell spells it (SIGTERM).
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(sig))
}
