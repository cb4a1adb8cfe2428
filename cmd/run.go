package cmd

// The root command: its options and their checks, and the run itself
// (leader.Run). schedule.go has the --schedule flags.

import (
	"cmp"
	"context"
	"math"
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
	pingTemplate    string // --ping-url-template, env LEADERRUN_PING_URL_TEMPLATE
	shellCommand    string // -c STRING: sh -c STRING
	oncePerHost     bool
	scheduleSpec    string // schedule.go
	scheduledEvents bool
}

func (o *runOptions) addFlags(fs *pflag.FlagSet) {
	r := &o.run
	inGroup(fs, groupCommand, func(fs *pflag.FlagSet) {
		fs.StringVarP(&o.shellCommand, "command", "c", "", "run `STRING` with sh -c, as flock -c does, instead of -- COMMAND")
	})
	inGroup(fs, groupLease, func(fs *pflag.FlagSet) {
		o.loc.addFlags(fs)
		fs.StringVar(&r.Lease.Identity, "identity", "", "the `TEXT` that names this holder in the blob's metadata (default HOSTNAME:PID)")
		fs.DurationVar(&r.Lease.Duration, "lease-duration", lease.DefaultDuration, "the lease's duration, whole seconds from 15s to 60s")
		fs.DurationVar(&r.Lease.RenewInterval, "renew-interval", 0, "how often the holder renews (default lease-duration/3, at most lease-duration/2)")
		fs.IntVar(&r.Lease.Slots, "slots", 1, "up to `N` holders run COMMAND at once, each on its own slot (1 to 50; LEADERRUN_SLOT tells COMMAND which); every host must give the same N")
	})
	inGroup(fs, groupWaiting, func(fs *pflag.FlagSet) {
		fs.BoolVarP(&r.NoWait, "no-wait", "n", false, "try once; if the lease is held, exit with the conflict code")
		fs.DurationVarP(&r.Timeout, "timeout", "w", 0, "give up waiting for the lease after this long (0: wait forever)")
		fs.IntVarP(&r.ConflictCode, "conflict-exit-code", "E", exit.Conflict, "the exit status when the lease was not acquired")
		fs.DurationVar(&r.Lease.PollInterval, "poll-interval", 2*time.Second, "how often a waiting follower reads the lease (±20% jitter)")
		fs.DurationVar(&r.DeputyPoll, "deputy-poll-interval", lease.DefaultDeputyPoll,
			"one waiting follower, the deputy, reads the lease this often (±20% jitter) to take it over within a fraction of a second; the others look at the deputy's place after a handover and every 15s (0: no deputy)")
		fs.StringVar(&r.ReadyCmd, "ready-cmd", "", "take neither the lease nor the deputy's place while the shell command `CMD` (sh -c) fails; run before the first try and once per poll while waiting")
		fs.DurationVar(&r.ReadyTimeout, "ready-timeout", runner.DefaultHealthTimeout, "a --ready-cmd running longer is killed and counts as failed")
		fs.DurationVar(&r.Splay, "splay", 0, "wait a random time in [0, DURATION) before the first request, to spread a fleet started by the same clock")
	})
	inGroup(fs, groupOnce, func(fs *pflag.FlagSet) {
		fs.DurationVar(&r.OncePer, "once-per", 0, "skip (exit 0) if a run started less than this long ago, by the storage service's clock")
		fs.BoolVar(&r.Once, "once", false, "skip (exit 0) if any host already completed a run with status 0 under this lease; a failed run lets the next one try (not with --slots > 1)")
		fs.BoolVar(&o.oncePerHost, "once-per-host", false, "skip (exit 0) if this host (--identity, else the hostname) already completed a run with status 0 under this lease; a failed run does not count")
		o.addScheduleFlags(fs)
	})
	inGroup(fs, groupStopping, func(fs *pflag.FlagSet) {
		fs.StringVar(&o.killSignal, "kill-signal", "TERM", "the `SIGNAL` that asks COMMAND to stop")
		fs.DurationVar(&r.Lease.KillGrace, "kill-grace", 10*time.Second, "after the stop signal, how long before SIGKILL")
		fs.DurationVar(&r.MaxRuntime, "max-runtime", 0, "stop COMMAND this long after its start, as a lost lease does (the stop signal, --kill-grace, SIGKILL) but keeping the lease until it is dead; record the run as timed out and exit 124, as timeout(1) does (0: no limit)")
		fs.BoolVar(&o.scheduledEvents, "scheduled-events", false,
			"step down before Azure reboots, redeploys, freezes, evicts or deletes this VM, and do not acquire while such an event is pending, "+
				"as the metadata service's Scheduled Events announce (LEADERRUN_IMDS_ENDPOINT sets the service's address)")
	})
	inGroup(fs, groupHealth, func(fs *pflag.FlagSet) {
		fs.StringVar(&r.Health.Cmd, "health-cmd", "", "while COMMAND runs, check its health with the shell command `CMD` (sh -c); unhealthy: stop COMMAND, release, exit 77")
		fs.DurationVar(&r.Health.Interval, "health-interval", runner.DefaultHealthInterval, "time between health checks")
		fs.DurationVar(&r.Health.Timeout, "health-timeout", runner.DefaultHealthTimeout, "a health check running longer is killed and counts as failed")
		fs.IntVar(&r.Health.Retries, "health-retries", runner.DefaultHealthRetries, "consecutive failed checks that make COMMAND unhealthy")
		fs.DurationVar(&r.Health.StartPeriod, "health-start-period", 0, "failed checks in this first period do not count")
	})
	inGroup(fs, groupMonitoring, func(fs *pflag.FlagSet) {
		fs.StringVar(&o.pingURL, "ping-url", "", "ping the healthchecks.io-style `URL` when COMMAND starts (/start) and ends (success, or /CODE); only the host that runs pings; https, or http to loopback only (the variable is preferred: the URL is a secret)")
		fs.StringVar(&o.pingTemplate, "ping-url-template", "", "ping another monitor: a `URL` with {event} (start, success, fail) or {state} (run, complete, fail), {code} and {rid}; no start ping without {event} or {state}")
		fs.StringVar(&r.MetricsFile, "metrics-file", "", "write gauges of this host's runs, atomically, to the node_exporter textfile `PATH` (.prom); a link there is replaced, never followed")
		fs.IntVar(&r.KeepOutput, "keep-output", defaultKeepOutput, "keep the last `BYTES` of COMMAND's stdout and stderr, interleaved, which still go where they go: the end ping's body, and a blob of the run in the container for 'leaderrun logs'; kept only when neither of leaderrun's stdout and stderr is a terminal (0: off)")
	})
	inGroup(fs, groupStorage, func(fs *pflag.FlagSet) {
		fs.DurationVar(&r.StorageTimeout, "storage-timeout", lease.DefaultStorageTimeout, "without --timeout: how long to retry storage that throttles or fails (503, 500, timeouts) before exit 69")
	})
}

// args takes COMMAND [ARG...], which must follow "--", or -c STRING.
// Without either, the usage is printed and leaderrun exits 64. argv is the
// command line as typed (nil in tests that build the tree themselves): a
// hint repeats it, since pflag takes a COMMAND's own flags for leaderrun's
// (echo -n: --no-wait) when "--" is missing.
func (o *runOptions) args(c *cobra.Command, args, argv []string) error {
	dash := c.ArgsLenAtDash()
	switch {
	case o.shellCommand != "" && dash < 0 && len(args) > 0:
		return exit.Usagef("unexpected arguments after -c STRING: %s (-c takes the whole command as one word: -c %s)",
			shellJoin(args), shellJoin([]string{o.shellCommand + " " + strings.Join(args, " ")}))
	case dash < 0 && len(args) > 0:
		// A word where a subcommand goes: a typo, if it is close to one.
		if argv == nil || firstWord(c.Flags(), argv) == 0 {
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				return exit.Usagef("unknown command %s; did you mean %q?", exit.Quote(args[0]), s[0])
			}
			if argv != nil {
				return exit.Usagef("unknown command %s; to run it under a lease, put it after --, as in: %s", exit.Quote(args[0]), dashHint(c.Flags(), argv, args))
			}
		}
		return exit.Usagef("put COMMAND after --, as in: %s", dashHint(c.Flags(), argv, args))
	case dash > 0:
		return exit.Usagef("unexpected arguments before --: %s", strings.Join(args[:dash], " "))
	case o.shellCommand != "" && len(args) > 0:
		return exit.Usagef("-c STRING and -- COMMAND cannot be used together: give one of them")
	case o.shellCommand != "":
		o.run.Argv = []string{"sh", "-c", o.shellCommand}
		return nil
	case c.Flags().Changed("command"):
		return exit.Usagef("invalid -c '': give a shell command")
	case len(args) == 0:
		if dash < 0 {
			c.SetOut(c.ErrOrStderr())
			_ = c.Usage()
		}
		return exit.Usagef("missing COMMAND: leaderrun -l NAME [flags] -- COMMAND [ARG...], or -c STRING")
	}
	o.run.Argv = args
	return nil
}

// dashHint is the command line as typed with "--" before its first word
// that is neither a flag nor a flag's value: "leaderrun -l x -- echo -n
// hi". Without the typed line, it puts the arguments pflag left after "--".
func dashHint(fs *pflag.FlagSet, argv, args []string) string {
	i := firstWord(fs, argv)
	if argv == nil || i < 0 {
		return "leaderrun -l NAME -- " + shellJoin(args)
	}
	return strings.TrimSuffix("leaderrun "+shellJoin(argv[:i]), " ") + " -- " + shellJoin(argv[i:])
}

// firstWord is the index in argv of the first word that is neither a flag
// of fs nor a flag's value; -1 if there is none.
func firstWord(fs *pflag.FlagSet, argv []string) int {
	takesValue := func(f *pflag.Flag) bool { return f != nil && f.NoOptDefVal == "" }
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			return -1
		case strings.HasPrefix(a, "--"):
			name, _, inline := strings.Cut(a[2:], "=")
			if !inline && takesValue(fs.Lookup(name)) {
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// -nq, -w10m, -w 10m: the first letter that takes a value ends
			// the group, and takes the rest or the next word.
			for j := 1; j < len(a); j++ {
				if takesValue(fs.ShorthandLookup(a[j : j+1])) {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		default:
			return i
		}
	}
	return -1
}

// shellJoin joins words as a POSIX shell reads them back, quoting those
// that need it.
func shellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		w = exit.Cut(w) // a hint names a long word, it does not repeat it
		q[i] = w
		if w == "" || strings.ContainsFunc(w, func(r rune) bool { return !isShellSafe(r) }) {
			q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

func isShellSafe(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)
}

// complete checks the options; log is the one the metadata service's
// client logs to.
func (o *runOptions) complete(c *cobra.Command, log hclog.Logger) error {
	fs, r := c.Flags(), &o.run
	// Started by COMMAND (nested), leaderrun does not take the lease name
	// and identity that the leaderrun above it exported as its own
	// (envDefaults): its lease name comes from -l or a LEADERRUN_LEASE set
	// on purpose, and its identity is its own.
	if err := o.loc.complete(fs); err != nil {
		return err
	}
	// The metadata service's address is checked only when the flag is on.
	if o.scheduledEvents {
		endpoint := os.Getenv("LEADERRUN_IMDS_ENDPOINT") // "": imds.DefaultEndpoint
		events, err := imds.NewClient(imds.Config{Endpoint: endpoint, Logger: log})
		if err != nil {
			return exit.Usagef("invalid LEADERRUN_IMDS_ENDPOINT=%s: %v", exit.Quote(endpoint), err)
		}
		r.Events = events
	}
	if o.oncePerHost {
		r.OncePerHost = cmp.Or(r.Lease.Identity, hostname())
		if err := checkDoneMarkerLength(o.loc.lease, r.OncePerHost); err != nil {
			return err
		}
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
		{"--kill-grace", r.Lease.KillGrace}, {"--once-per", r.OncePer}, {"--splay", r.Splay}, {"--max-runtime", r.MaxRuntime},
		{"--deputy-poll-interval", r.DeputyPoll},
	} {
		if f.d < 0 {
			return exit.Usagef("invalid %s %s: must not be negative", f.name, f.d)
		}
	}
	if r.KeepOutput < 0 || r.KeepOutput > lease.MaxOutput {
		return exit.Usagef("invalid --keep-output %d: use 0 (off) to %d bytes", r.KeepOutput, lease.MaxOutput)
	}
	if longest := lease.OutputBlob(o.loc.lease, lease.MaxSlots-1, math.MaxInt64); r.KeepOutput > 0 && len(longest) > azureBlobNameMax {
		// The run's output blob adds up to 36 characters to the name.
		if fs.Changed("keep-output") || os.Getenv(flagEnv["keep-output"]) != "" {
			return exit.Usagef("lease name %s is too long for --keep-output: with it a lease name may have at most %d characters",
				exit.Quote(o.loc.lease), azureBlobNameMax-(len(longest)-len(o.loc.lease)))
		}
		log.Debug("the command's output is not kept: the lease name is too long for its blob", "max", azureBlobNameMax-(len(longest)-len(o.loc.lease)))
		r.KeepOutput = 0
	}
	if r.StorageTimeout <= 0 {
		return exit.Usagef("invalid --storage-timeout %s: must be positive", r.StorageTimeout)
	}
	if fs.Changed("poll-interval") && r.Lease.PollInterval == 0 {
		return exit.Usagef("invalid --poll-interval 0: a follower must not poll in a busy loop")
	}
	if d := r.DeputyPoll; d > 0 && d < minDeputyPoll {
		return exit.Usagef("invalid --deputy-poll-interval %s: use 0 (no deputy) or at least %s", d, minDeputyPoll)
	}
	if fs.Changed("ready-cmd") && r.ReadyCmd == "" {
		return exit.Usagef("invalid --ready-cmd '': give a shell command, or leave the flag out")
	}
	if r.ReadyTimeout <= 0 {
		return exit.Usagef("invalid --ready-timeout %s: must be positive", r.ReadyTimeout)
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

// defaultKeepOutput is --keep-output's default: 64 KiB, within the
// 100 kB a healthchecks.io ping's body keeps.
const defaultKeepOutput = 64 << 10

// minDeputyPoll is the shortest --deputy-poll-interval: the deputy's reads
// must not become a busy loop on the blob (10 a second at most).
const minDeputyPoll = 100 * time.Millisecond

// hostname is this host's name, "localhost" if it has none.
func hostname() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "localhost"
	}
	return host
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
			return 0, exit.Usagef("invalid --kill-signal %s: no such signal", exit.Quote(s))
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig := unix.SignalNum(name)
	if sig == 0 {
		return 0, exit.Usagef("invalid --kill-signal %s: use a name such as TERM, INT, HUP or a number", exit.Quote(s))
	}
	return sig, nil
}
