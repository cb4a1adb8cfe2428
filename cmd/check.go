package cmd

// `leaderrun check`: a monitoring plugin (Nagios, Icinga, Sensu). One line
// on stdout and the plugins' exit statuses (0 OK, 1 WARNING, 2 CRITICAL, 3
// UNKNOWN), usage errors included; the decision is decideCheck's
// (check_decide.go).

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type checkOptions struct {
	loc    locationOptions
	maxAge time.Duration
}

func newCheckCmd(a *app) *cobra.Command {
	o := &checkOptions{}
	c := &cobra.Command{
		Use:   "check -l NAME --max-age DURATION",
		Short: "Monitoring plugin: did a run of NAME succeed within DURATION?",
		Long: `check is a monitoring plugin for Nagios, Icinga, Sensu and the like. It reads
the lease's recorded runs (one listing of NAME, no lease operation) and prints
one line on stdout that begins with the state, followed by perfdata:

  OK        the last run that succeeded ended within --max-age, and no run
            after it failed (exit 0)
  WARNING   it did, but a later run failed: a non-zero exit, or a run that
            lost its lease before recording its end (exit 1)
  CRITICAL  no run ended with status 0 within --max-age, or ever (exit 2)
  UNKNOWN   the storage cannot be read, or a usage error (exit 3)

Ages are by the storage service's clock (the listing's Date), never this
host's. These exit statuses are the plugins' convention, not leaderrun's
usual 64 and 69.`,
		Example: `  leaderrun check -l cron/report --max-age 26h
  OK: last successful run ended 3m12s ago on vm-3 (term 42) | age=192s;;93600 last_exit=0

  # Nagios / Icinga 1.x
  define command {
    command_name  check_leaderrun
    command_line  /usr/bin/leaderrun check -l $ARG1$ --max-age $ARG2$
  }`,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.complete(c.Flags()); err != nil {
				return checkUsage(err)
			}
			return runCheck(c.Context(), a, o)
		},
	}
	usageErrorsAs(c, a, checkUsage)
	o.loc.addFlags(c.Flags())
	c.Flags().DurationVar(&o.maxAge, "max-age", 0, "CRITICAL unless a run ended with status 0 less than this long ago (required)")
	return c
}

func (o *checkOptions) complete(fs *pflag.FlagSet) error {
	if err := o.loc.complete(fs); err != nil {
		return err
	}
	if !fs.Changed("max-age") {
		return fmt.Errorf("missing --max-age DURATION: how long ago the last successful run may have ended")
	}
	if o.maxAge <= 0 {
		return fmt.Errorf("invalid --max-age %s: must be more than 0", o.maxAge)
	}
	return nil
}

// checkUsage is a usage error of check: UNKNOWN.
func checkUsage(err error) error {
	return &pluginExit{res: checkUnknown(fmt.Errorf("usage: %w (see 'leaderrun check --help')", err))}
}

func runCheck(ctx context.Context, a *app, o *checkOptions) error {
	rctx, cancel := context.WithTimeout(ctx, operatorTimeout)
	defer cancel()
	_, v, err := o.loc.view(rctx, a.log)
	if err != nil {
		return &pluginExit{res: checkUnknown(err)}
	}
	in := checkInput{Runs: v.Runs(), LastSuccess: v.LastSuccess(), Now: v.Date, MaxAge: o.maxAge}
	if s, ok := viewSchedule(v.Slot(0).Props, v.Date); ok {
		in.Schedule = &s
	}
	return &pluginExit{res: decideCheck(in)}
}
