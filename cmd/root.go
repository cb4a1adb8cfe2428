package cmd

// Execute, the root command's tree, and what every command shares: the
// exit status, the log, the environment's defaults and the arguments.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/runner"
)

// Execute runs leaderrun with os.Args and returns the exit status. When a
// signal ended COMMAND or the wait, leaderrun ends by that signal instead,
// as a wrapper does (exit.Raise), once the lease is released, the end
// recorded and the line logged; the status is returned only where the
// signal does not end the process.
func Execute() int {
	if code, ok := runner.RunGuard(os.Args); ok {
		return code
	}
	code, sig := executeSignal(os.Args[1:], os.Stdout, os.Stderr)
	if sig != 0 {
		exit.Raise(sig)
	}
	return code
}

// execute is Execute with its arguments and outputs given, for tests; it
// never raises a signal.
func execute(args []string, stdout, stderr io.Writer) int {
	code, _ := executeSignal(args, stdout, stderr)
	return code
}

// executeSignal runs the command line and returns the exit status, and the
// signal to end by (0: none).
func executeSignal(args []string, stdout, stderr io.Writer) (int, syscall.Signal) {
	app := &app{stdout: stdout, stderr: stderr, argv: args, log: newLogger(stderr, logOptions{level: "info"})}
	root := newRootCmd(app)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err != nil {
		app.report(err)
	}
	return exitCode(err), exit.SignalOf(err)
}

// app is what every command shares: the outputs, and the logger that the
// persistent flags configure.
type app struct {
	stdout, stderr io.Writer
	argv           []string // the arguments as typed, for hints
	logOpts        logOptions
	log            hclog.Logger
}

// report writes the one plain line that precedes a non-zero exit of
// leaderrun's own, at error level; with exit status 0 (-E 0: not acquiring
// is expected) at info, so that -q prints nothing, as flock -n does; and at
// info too when leaderrun ends by a signal that stopped its wait: a stop
// asked from outside is no error.
func (a *app) report(err error) {
	var pe *pluginExit
	if errors.As(err, &pe) {
		fmt.Fprintln(a.stdout, pe.res.Line) // check: its one line, on stdout
		return
	}
	var ee *exit.Error
	switch {
	case !errors.As(err, &ee) || ee.Code == exit.Usage:
		// usage errors, ours or cobra's (unknown command, bad flag value)
		a.log.Error(err.Error() + " (see 'leaderrun --help')")
	case ee.Err == nil:
	case ee.Code == exit.OK, ee.Signal != 0:
		a.log.Info(ee.Err.Error())
	default:
		a.log.Error(ee.Err.Error())
	}
}

// exitCode decides leaderrun's exit status; it is the only place that does.
// An error that carries none is cobra's (unknown command, bad flag): usage.
func exitCode(err error) int {
	if err == nil {
		return exit.OK
	}
	if code, ok := exit.Code(err); ok {
		return code
	}
	var pe *pluginExit
	if errors.As(err, &pe) {
		return int(pe.res.State)
	}
	return exit.Usage
}

// pluginExit is every outcome of `leaderrun check`, OK included: its line
// goes to stdout, and its state is the exit status (check.go).
type pluginExit struct{ res checkResult }

func (e *pluginExit) Error() string { return e.res.Line }

func newRootCmd(a *app) *cobra.Command { return newRootCmdWith(a, runLeader) }

// Command returns leaderrun's command tree, writing to io.Discard, for
// scripts/man, which writes the man pages from it: outside the binary, so
// that leaderrun does not load a man-page renderer at every start.
func Command() *cobra.Command {
	a := &app{stdout: io.Discard, stderr: io.Discard, log: newLogger(io.Discard, logOptions{level: "info"})}
	return newRootCmd(a)
}

// newRootCmdWith is newRootCmd with the function that runs a validated
// command line given, so that tests can check a line without running it.
func newRootCmdWith(a *app, run func(context.Context, *app, *runOptions) error) *cobra.Command {
	opts := &runOptions{}
	root := &cobra.Command{
		Use:   "leaderrun -l NAME [flags] -- COMMAND [ARG...]",
		Short: "Run a command only while this host holds an Azure blob lease",
		Annotations: map[string]string{synopsisAnnotation: "leaderrun -l NAME [flags] -c STRING\n" +
			"leaderrun SUBCOMMAND [flags]"},
		Long: `Run COMMAND only while this host holds leadership: a lease on an Azure
Storage blob. Every host of a fleet runs the same line; at most one of them
runs COMMAND at any moment.

COMMAND never outlives the lease: if renewals stop succeeding, its process
group gets the stop signal and then SIGKILL before the lease could pass to
another host (for a 15s lease: SIGTERM 8.5s and SIGKILL 13.5s after the last
successful renewal was sent). If leaderrun itself is killed (kill -9),
COMMAND's group is killed at once; on Linux COMMAND also has a parent-death
signal, which macOS lacks.

COMMAND is everything after --, run directly (no shell), found on PATH before
any storage request. -c STRING runs STRING with sh -c instead, as flock -c
does. SIGTERM, SIGINT, SIGHUP and SIGQUIT are forwarded to COMMAND's group;
the lease is kept while COMMAND shuts down (up to --kill-grace, then SIGKILL)
and released after it has exited. A second SIGINT kills at once.

A DURATION is Go's form (90s, 1h30m) or a systemd time span (5min, 1h 30min,
2d, 1w); a number alone is seconds. Credentials come from the environment
only: see 'leaderrun help environment'.`,
		Example: `  # every VM's crontab, every minute: each occurrence of the schedule runs
  # once in the fleet; one the whole fleet missed runs when a VM is back
  * * * * * leaderrun -l job --schedule '*/5 * * * *' -q -- /opt/job

  # cron fires on every VM: one runs the job, the others exit at once;
  # -E 0: a lease still held by a long run is nothing for cron to mail
  */5 * * * * leaderrun -l job -n -E 0 --once-per 4m -q -- /opt/job

  # a hot standby under systemd, stepping down before Azure evicts,
  # reboots or freezes its VM (Scheduled Events)
  ExecStart=/usr/bin/leaderrun -l sched --scheduled-events -- /opt/sched

  # a scale set's deploy script: one instance migrates, the others wait
  # for it (up to 10 minutes) and then skip
  leaderrun -l deploy/migrate-$VERSION --once -w 10m -- ./migrate.sh

  # patch a scale set two instances at a time, each instance once
  leaderrun -l patch/2026-11 --slots 2 --once-per-host -- ./patch.sh

  # a shell pipeline, as flock -c runs one
  leaderrun -l backup -c 'pg_dump shop | gzip > /backup/shop.sql.gz'

  # who holds it, and what ran last
  leaderrun status -l job`,
		Args:          func(c *cobra.Command, args []string) error { return opts.args(c, args, a.argv) },
		SilenceErrors: true,
		// "statu": did you mean "status"? (cobra's default distance, which
		// it sets only for the errors it makes itself)
		SuggestionsMinimumDistance: 2,
		SilenceUsage:               true,
		Version:                    currentVersion().String(),
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			return a.setupLog(c)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.complete(c, a.log); err != nil {
				return err
			}
			return run(c.Context(), a, opts)
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return exit.With(exit.Usage, err) })
	addLogFlags(root.PersistentFlags(), &a.logOpts)
	opts.addFlags(root.Flags())
	root.AddCommand(newStatusCmd(a), newListCmd(a), newHistoryCmd(a), newCheckCmd(a), newPauseCmd(a),
		newResumeCmd(a), newBreakCmd(a), newLogsCmd(a), newTriggerCmd(a), newDoctorCmd(a), newVersionCmd(a))
	completeLeaseNames(root)
	setupHelp(root)
	return root
}

// envDefaults applies the environment variables of flagEnv to the flags of
// fs that the command line did not set.
func envDefaults(fs *pflag.FlagSet) error {
	for _, flag := range slices.Sorted(maps.Keys(flagEnv)) { // of several bad ones, the same is named every time
		name := flagEnv[flag]
		f := fs.Lookup(flag)
		if f == nil || f.Changed || leader.SetByLeaderrun(name) {
			continue // a value the leaderrun above exported for its COMMAND is not an input
		}
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			continue
		}
		if err := fs.Set(flag, v); err != nil {
			return exit.Usagef("invalid %s=%s: %v", name, exit.Quote(v), err)
		}
	}
	return nil
}

func unexpectedArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return exit.Usagef("unexpected arguments: %s", strings.Join(args, " "))
	}
	return nil
}

// usageErrorsAs makes wrap turn every usage error of c into its own: those
// of its arguments and flags, and those of the root's log flags, checked
// before RunE. check and doctor have exit statuses of their own.
func usageErrorsAs(c *cobra.Command, a *app, wrap func(error) error) {
	c.Args = func(c *cobra.Command, args []string) error {
		if err := unexpectedArgs(c, args); err != nil {
			return wrap(err)
		}
		return nil
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return wrap(err) })
	c.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if err := a.setupLog(c); err != nil {
			return wrap(err)
		}
		return nil
	}
}

// logOptions configure leaderrun's own log, which goes to stderr; COMMAND's
// output is never touched.
type logOptions struct {
	level  string
	format string
	quiet  bool
}

func addLogFlags(fs *pflag.FlagSet, o *logOptions) {
	inGroup(fs, groupLogging, func(fs *pflag.FlagSet) {
		fs.StringVar(&o.level, "log-level", "info", "leaderrun's log `LEVEL`, on stderr: trace, debug, info, warn or error")
		fs.StringVar(&o.format, "log-format", "text", "leaderrun's log `FORMAT`: text or json")
		fs.BoolVarP(&o.quiet, "quiet", "q", false, "log errors only")
	})
}

func (a *app) setupLog(c *cobra.Command) error {
	if err := envDefaults(c.Flags()); err != nil {
		return err
	}
	o := a.logOpts
	if hclog.LevelFromString(o.level) == hclog.NoLevel {
		return exit.Usagef("invalid --log-level %s: use trace, debug, info, warn or error", exit.Quote(o.level))
	}
	if o.format != "text" && o.format != "json" {
		return exit.Usagef("invalid --log-format %s: use text or json", exit.Quote(o.format))
	}
	if o.quiet {
		o.level = "error"
	}
	a.log = newLogger(a.stderr, o)
	return nil
}

func newLogger(w io.Writer, o logOptions) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "leaderrun",
		Level:      hclog.LevelFromString(o.level),
		Output:     w,
		JSONFormat: o.format == "json",
		TimeFormat: "2006-01-02T15:04:05.000Z07:00",
	})
}
