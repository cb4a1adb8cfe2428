package cmd

// The root command: its options and their checks, and the run itself
// (leader.Run). schedule.go has the --schedule flags.

import (
	"cmp"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/imds"
	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/monitor"
	"github.com/leaderrun/leaderrun/runner"
)

// runOptions are the root command's: run COMMAND while holding the lease.
// Most flags fill the run's options (leader.Options) directly; complete
// checks them and fills in the rest.
type runOptions struct {
	loc             locationOptions
	run             leader.Options
	killSignal      string
	pingURL         string // --ping-url, env LEADERRUN_PING_URL
	pingTemplate    string
	oncePerHost     bool
	scheduleSpec    string // schedule.go
	scheduledEvents bool
}

func (o *runOptions) addFlags(fs *pflag.FlagSet) {
	o.loc.addFlags(fs)
	r := &o.run
	r.Lease.Duration = lease.DefaultDuration
	fs.StringVar(&r.Lease.Identity, "identity", "", "who holds the lease, recorded in the blob's metadata (env LEADERRUN_IDENTITY; default HOSTNAME:PID)")
	fs.BoolVarP(&r.NoWait, "no-wait", "n", false, "try once; if the lease is held, exit with the conflict code")
	fs.DurationVarP(&r.Timeout, "timeout", "w", 0, "give up waiting for the lease after this long (0 = wait forever)")
	fs.IntVarP(&r.ConflictCode, "conflict-exit-code", "E", exit.Conflict, "exit status when the lease was not acquired")
	fs.Var((*durationValue)(&r.Lease.Duration), "lease-duration", "lease duration, whole seconds from 15s to 60s (env LEADERRUN_LEASE_DURATION)")
	fs.DurationVar(&r.Lease.RenewInterval, "renew-interval", 0, "how often the holder renews (default lease-duration/3, at most lease-duration/2)")
	fs.DurationVar(&r.Lease.PollInterval, "poll-interval", 2*time.Second, "how often a waiting follower reads the lease (±20% jitter)")
	fs.StringVar(&o.killSignal, "kill-signal", "TERM", "the signal that asks COMMAND to stop")
	fs.DurationVar(&r.Lease.KillGrace, "kill-grace", 10*time.Second, "after the stop signal, how long before SIGKILL")
	fs.DurationVar(&r.OncePer, "once-per", 0, "skip (exit 0) if a run started less than this long ago, by the storage service's clock")
	fs.DurationVar(&r.StorageTimeout, "storage-timeout", lease.DefaultStorageTimeout, "without --timeout: how long to retry storage that throttles or fails (503, 500, timeouts) before exit 69")
	fs.StringVar(&o.pingURL, "ping-url", "", "ping this healthchecks.io-style URL when COMMAND starts (/start) and ends (success, or /CODE); only the host that runs pings (env LEADERRUN_PING_URL, preferred: the URL is a secret)")
	fs.StringVar(&o.pingTemplate, "ping-url-template", "", "ping another monitor: a URL with {event} (start, success, fail), {code} and {rid}")
	fs.StringVar(&r.MetricsFile, "metrics-file", "", "write gauges of this host's runs to this node_exporter textfile (.prom), atomically (env LEADERRUN_METRICS_FILE)")
	fs.DurationVar(&r.Splay, "splay", 0, "wait a random time in [0, DURATION) before the first request, to spread a fleet started by the same clock")
	fs.IntVar(&r.Lease.Slots, "slots", 1, "up to N holders run COMMAND at once, each on its own slot (1 to 50; LEADERRUN_SLOT tells COMMAND which); every host must give the same N")
	fs.BoolVar(&r.Once, "once", false, "skip (exit 0) if any host already completed a run with status 0 under this lease; a failed run lets the next one try (not with --slots > 1: it runs COMMAND once for the fleet)")
	fs.BoolVar(&o.oncePerHost, "once-per-host", false, "skip (exit 0) if this host (--identity, else the hostname) already completed a run with status 0 under this lease; a failed run does not count")
	o.addScheduleFlags(fs)
	fs.StringVar(&r.Health.Cmd, "health-cmd", "", "while COMMAND runs, check its health with this shell command (sh -c); unhealthy: stop COMMAND, release, exit 77")
	fs.DurationVar(&r.Health.Interval, "health-interval", runner.DefaultHealthInterval, "time between health checks")
	fs.DurationVar(&r.Health.Timeout, "health-timeout", runner.DefaultHealthTimeout, "a health check running longer is killed and counts as failed")
	fs.IntVar(&r.Health.Retries, "health-retries", runner.DefaultHealthRetries, "consecutive failed checks that make COMMAND unhealthy")
	fs.DurationVar(&r.Health.StartPeriod, "health-start-period", 0, "failed checks in this first period do not count")
	fs.BoolVar(&o.scheduledEvents, "scheduled-events", false,
		"step down before Azure reboots, redeploys, freezes, evicts or deletes this VM, and do not acquire while such an event is pending, "+
			"as the metadata service's Scheduled Events announce (env LEADERRUN_SCHEDULED_EVENTS=true; service address from LEADERRUN_IMDS_ENDPOINT)")
}

// args takes COMMAND [ARG...], which must follow "--". Without any
// argument, the usage is printed and leaderrun exits 64.
func (o *runOptions) args(c *cobra.Command, args []string) error {
	dash := c.ArgsLenAtDash()
	switch {
	case dash < 0 && len(args) > 0:
		return exit.Usagef("put COMMAND after --, as in: leaderrun -l NAME -- %s", strings.Join(args, " "))
	case dash > 0:
		return exit.Usagef("unexpected arguments before --: %s", strings.Join(args[:dash], " "))
	case len(args) == 0:
		if dash < 0 {
			c.SetOut(c.ErrOrStderr())
			_ = c.Usage()
		}
		return exit.Usagef("missing COMMAND: leaderrun -l NAME [flags] -- COMMAND [ARG...]")
	}
	o.run.Argv = args
	return nil
}

// complete checks the options; log is the one the metadata service's
// client logs to.
func (o *runOptions) complete(c *cobra.Command, log hclog.Logger) error {
	fs, r := c.Flags(), &o.run
	// Started by COMMAND (nested), leaderrun does not take the lease name
	// and identity that the leaderrun above it exported as its own: its
	// lease name comes from -l or a LEADERRUN_LEASE set on purpose, and its
	// identity is its own.
	leaseGiven := fs.Changed("lease")
	if err := o.loc.complete(fs); err != nil {
		return err
	}
	if !leaseGiven && leader.SetByLeaderrun("LEADERRUN_LEASE") {
		return exit.Usagef("missing lease name: use -l NAME (LEADERRUN_LEASE=%q was set by the leaderrun this one runs under)", o.loc.lease)
	}
	env := map[string]string{
		"identity":         "LEADERRUN_IDENTITY",
		"lease-duration":   "LEADERRUN_LEASE_DURATION",
		"ping-url":         "LEADERRUN_PING_URL",
		"metrics-file":     "LEADERRUN_METRICS_FILE",
		"schedule":         "LEADERRUN_SCHEDULE",
		"scheduled-events": "LEADERRUN_SCHEDULED_EVENTS",
	}
	if leader.SetByLeaderrun("LEADERRUN_IDENTITY") {
		delete(env, "identity")
	}
	if err := envDefaults(fs, env); err != nil {
		return err
	}
	// The metadata service's address is checked only when the flag is on.
	if o.scheduledEvents {
		endpoint := os.Getenv("LEADERRUN_IMDS_ENDPOINT") // "": imds.DefaultEndpoint
		events, err := imds.NewClient(imds.Config{Endpoint: endpoint, Logger: log})
		if err != nil {
			return exit.Usagef("invalid LEADERRUN_IMDS_ENDPOINT=%q: %v", endpoint, err)
		}
		r.Events = events
	}
	if o.oncePerHost {
		r.OncePerHost = cmp.Or(r.Lease.Identity, hostname())
	}
	if r.Lease.Identity == "" {
		r.Lease.Identity = hostname() + ":" + strconv.Itoa(os.Getpid())
	}
	if r.ConflictCode < 0 || r.ConflictCode > 255 {
		return exit.Usagef("invalid --conflict-exit-code %d: use 0 to 255", r.ConflictCode)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"--timeout", r.Timeout}, {"--renew-interval", r.Lease.RenewInterval}, {"--poll-interval", r.Lease.PollInterval},
		{"--kill-grace", r.Lease.KillGrace}, {"--once-per", r.OncePer}, {"--splay", r.Splay},
	} {
		if f.d < 0 {
			return exit.Usagef("invalid %s %s: must not be negative", f.name, f.d)
		}
	}
	if r.StorageTimeout <= 0 {
		return exit.Usagef("invalid --storage-timeout %s: must be positive", r.StorageTimeout)
	}
	if fs.Changed("poll-interval") && r.Lease.PollInterval == 0 {
		return exit.Usagef("invalid --poll-interval 0: a follower must not poll in a busy loop")
	}
	if n := r.Lease.Slots; n < 1 || n > lease.MaxSlots {
		return exit.Usagef("invalid --slots %d: use 1 to %d", n, lease.MaxSlots)
	}
	if o.pingURL != "" || o.pingTemplate != "" {
		p, err := monitor.NewPinger(o.pingURL, o.pingTemplate, hclog.NewNullLogger())
		if err != nil {
			return exit.Usagef("%v", err)
		}
		r.Pinger = p
	}
	if err := o.completeSchedule(fs); err != nil {
		return err
	}
	if fs.Changed("health-cmd") && r.Health.Cmd == "" {
		return exit.Usagef("invalid --health-cmd '': give a shell command, or leave the flag out")
	}
	if err := r.Health.Validate(); err != nil {
		return exit.Usagef("invalid --health-* flags: %v", err)
	}
	sig, err := parseSignal(o.killSignal)
	if err != nil {
		return err
	}
	r.StopSignal = sig
	return nil
}

// hostname is this host's name, "localhost" if it has none.
func hostname() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "localhost"
	}
	return host
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

// runLeader runs COMMAND while holding the lease (leader.Run).
func runLeader(ctx context.Context, a *app, o *runOptions) error {
	client, err := o.loc.client(a.log)
	if err != nil {
		return err
	}
	r := o.run
	r.Client = client
	r.Lease.Version, r.Lease.Logger = Version(), a.log
	return leader.Run(ctx, r)
}

// parseSignal accepts TERM, SIGTERM, sigterm or 15.
func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n >= 65 || unix.SignalName(syscall.Signal(n)) == "" {
			return 0, exit.Usagef("invalid --kill-signal %q: no such signal", s)
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig := unix.SignalNum(name)
	if sig == 0 {
		return 0, exit.Usagef("invalid --kill-signal %q: use a name such as TERM, INT, HUP or a number", s)
	}
	return sig, nil
}
