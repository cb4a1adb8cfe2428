package cmd

// `leaderrun trigger`: run a lease's line once, now, on whichever host
// invokes it next (lease/trigger.go), and with --wait follow that run to
// its end.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
)

type triggerOptions struct {
	loc     locationOptions
	reason  string
	wait    bool
	timeout time.Duration
}

// triggerPoll is how often trigger --wait reads the lease.
const triggerPoll = 2 * time.Second

func newTriggerCmd(a *app) *cobra.Command {
	o := &triggerOptions{}
	c := &cobra.Command{
		Use:   "trigger -l NAME [--reason TEXT] [--wait [-w DURATION]]",
		Short: "Run the line of NAME once, now, on the next host that invokes it",
		Long: `trigger writes the trigger marker of NAME (the blob NAME~trigger, metadata
only: who, when by the storage service's clock, why). The next invocation of
the lease's line, on any host, runs COMMAND once, whatever its --schedule,
--once-per window or --once say: COMMAND gets LEADERRUN_TRIGGER=manual and
LEADERRUN_OCCURRENCE set to the trigger's time, and history names the run
"manual by WHO: REASON". The claim of that run consumes the trigger, once
(a claim whose answer was lost still runs it once). A pause holds it off, and
so does a lease held by a run still going: the next invocation after them
runs it.

A lease whose line is not a --schedule, --once-per or --once line of one
slot has nothing that would run a trigger: exit 64, nothing written. A
trigger still pending is joined, not replaced: two triggers before a run make
one run.

With --wait, trigger follows the run it asked for and exits with its status;
75 if no host took it within -w (default: wait for ever), 76 if its holder
lost the lease or died before it recorded its end.`,
		Example: `  leaderrun trigger -l cron/report --reason "rerun after the fix, ticket 4711"
  leaderrun trigger -l nightly/export --wait -w 5m && echo "exported"`,
		Args: unexpectedArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.loc.complete(c.Flags()); err != nil {
				return err
			}
			if o.timeout < 0 {
				return exit.Usagef("invalid --timeout %s: must not be negative", o.timeout)
			}
			if c.Flags().Changed("timeout") && !o.wait {
				return exit.Usagef("--timeout needs --wait")
			}
			if _, err := (lease.Trigger{By: requester(), Reason: o.reason}).Metadata(); err != nil {
				return exit.With(exit.Usage, err) // before any request
			}
			return runTrigger(c.Context(), a, o)
		},
	}
	o.loc.addFlags(c.Flags())
	fs := c.Flags()
	fs.StringVar(&o.reason, "reason", "", "why: in history, in status and in the log of the host that runs it (printable ASCII, at most 256 characters)")
	fs.BoolVar(&o.wait, "wait", false, "follow the triggered run until it ends, and exit with its status")
	fs.DurationVarP(&o.timeout, "timeout", "w", 0, "with --wait: give up (75) if no host took the trigger within DURATION (0: wait for ever)")
	return c
}

// requester names who triggers: USER@HOSTNAME.
func requester() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	return cmp.Or(name, "unknown") + "@" + hostname()
}

func runTrigger(ctx context.Context, a *app, o *triggerOptions) error {
	client, err := o.loc.client(a.log)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, operatorTimeout)
	defer cancel()
	t, joined, err := client.RequestRun(rctx, requester(), o.reason)
	var nt *lease.NotTriggerableError
	switch {
	case errors.As(err, &nt):
		return exit.With(exit.Usage, fmt.Errorf("cannot trigger lease %s: nothing would run it: %s", exit.Quote(o.loc.lease), nt.Why))
	case err != nil:
		var ce *lease.ConfigError
		if errors.As(err, &ce) {
			return exit.With(exit.Usage, err)
		}
		return exit.With(exit.Unavailable, fmt.Errorf("cannot trigger lease %s: %w", exit.Quote(o.loc.lease), err))
	case joined:
		a.log.Info("a trigger is already pending: the next invocation of the lease's line runs it once", "lease", exit.Cut(o.loc.lease),
			"by", exit.Cut(t.By), "at", timeOr(t.At, "unknown"), "reason", exit.Cut(t.Reason))
	default:
		a.log.Info("triggered: the next invocation of the lease's line runs it once", "lease", exit.Cut(o.loc.lease),
			"at", timeOr(t.At, "unknown"), "reason", exit.Cut(t.Reason))
	}
	if !o.wait {
		return nil
	}
	var takeBy time.Time
	if o.timeout > 0 {
		takeBy = time.Now().Add(o.timeout)
	}
	r, err := client.FollowTrigger(ctx, t, triggerPoll, lease.DefaultStorageTimeout, takeBy, func(term int64, holder string) {
		a.log.Info("the trigger was taken: following the run", "term", term, "holder", exit.Cut(holder))
	})
	switch {
	case errors.Is(err, lease.ErrNotTaken):
		return exit.With(exit.Conflict, fmt.Errorf("no host took the trigger of lease %s within %s (-w); it stays pending", exit.Quote(o.loc.lease), o.timeout))
	case err != nil:
		return leader.StorageExit(fmt.Errorf("following the trigger of lease %s: %w", exit.Quote(o.loc.lease), err))
	case r.EndUnknown():
		return exit.With(exit.Lost, fmt.Errorf("the triggered run of lease %s (term %d on %s) ended without recording its end: its holder lost the lease or died",
			exit.Quote(o.loc.lease), r.Term, exit.Cut(r.Holder)))
	}
	code := *r.ExitCode
	a.log.Info("the triggered run ended", "exit", code, "term", r.Term, "holder", exit.Cut(r.Holder), "end", timeOr(r.End, "unknown"))
	if code == exit.OK {
		return nil
	}
	return exit.With(code, nil) // the run's own status, as a run passes COMMAND's on
}
