package cmd

// `leaderrun doctor`: every request a run makes, tried for real on a
// scratch blob (doctor.Run), as a table for a person or JSON for
// scripts, and an exit status that says whether a run would work: 0 all
// ok, 1 warnings, 2 something a run needs is refused, 3 usage.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/doctor"
	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
)

// doctor's exit statuses.
const (
	doctorWarning = 1
	doctorFailed  = 2
	doctorUsage   = 3
)

// doctorTimeout bounds the whole: some twenty-five requests, each bounded.
const doctorTimeout = 2 * time.Minute

type doctorOptions struct {
	loc    locationOptions
	cfg    doctor.Config // Client: filled by runDoctor
	output string
}

func newDoctorCmd(a *app) *cobra.Command {
	o := &doctorOptions{cfg: doctor.Config{Duration: lease.DefaultDuration}}
	c := &cobra.Command{
		Use:   "doctor [-l NAME] [-o text|json]",
		Short: "Try everything a run needs on this account, before the fleet relies on it",
		Long: `doctor tries, for real, every request a run makes, on a scratch blob beside
the lease NAME (NAME~doctor-RANDOM) that it creates, leases, writes, lists and
deletes, and reports one check per line:

  credential   which credential is used (for Microsoft Entra ID, which source
               of DefaultAzureCredential), and whether the service accepts it
  api version  the Blob service API version sent, and whether it is accepted
  account      account kind, SKU and hierarchical namespace
  container    an immutability policy or a legal hold, which refuse the writes
               of every run (a missing container is created, as a run would)
  create, read, lease, metadata, list, delete
               each allowed or refused, naming the role or the SAS permission
               that grants it
  clock        this host's clock against the service's Date
  round trip   p50 and p95 of 10 reads, and what that leaves a renewal at
               --lease-duration
  lease name   NAME itself: its state, or a directory that cannot be a lease

It prints no secret and leaves no blob behind (unless deleting is refused,
which it says). Exit status: 0 all ok, 1 warnings, 2 something a run needs
is refused, 3 usage error. -o json prints {"ok": …, "checks": [{"name",
"status", "detail"}]}, where ok is false when a check failed.`,
		Example: `  leaderrun doctor -l cron/report
  leaderrun doctor -l scheduler --lease-duration 30s -o json |
    jq -r '.checks[] | select(.status != "ok") | .detail'`,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.complete(c.Flags()); err != nil {
				return doctorUsageError(err)
			}
			return runDoctor(c.Context(), a, o)
		},
	}
	usageErrorsAs(c, a, doctorUsageError)
	fs := c.Flags()
	fs.StringVarP(&o.loc.lease, "lease", "l", "", "the lease a run will use (`NAME`); the scratch blob goes beside it")
	o.loc.addContainerFlags(fs)
	fs.DurationVar(&o.cfg.Duration, "lease-duration", lease.DefaultDuration, "the lease duration runs will use, whole seconds from 15s to 60s")
	fs.DurationVar(&o.cfg.KillGrace, "kill-grace", 10*time.Second, "the --kill-grace runs will use")
	addOutputFlag(fs, &o.output)
	return c
}

func (o *doctorOptions) complete(fs *pflag.FlagSet) error {
	if err := envDefaults(fs); err != nil {
		return err
	}
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.cfg.KillGrace < 0 {
		return fmt.Errorf("invalid --kill-grace %s: must not be negative", o.cfg.KillGrace)
	}
	return nil
}

// doctorUsageError is a usage error of doctor: exit 3, as its help says.
func doctorUsageError(err error) error {
	return exit.With(doctorUsage, fmt.Errorf("%w (see 'leaderrun doctor --help')", err))
}

func runDoctor(ctx context.Context, a *app, o *doctorOptions) error {
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	o.cfg.Client = o.loc.clientConfig(o.loc.lease, a.log)
	checks, err := doctor.Run(ctx, o.cfg)
	if err != nil {
		return doctorUsageError(err)
	}
	if o.output == "json" {
		if err := writeJSON(a.stdout, doctorJSON(checks)); err != nil {
			return err
		}
	} else {
		writeDoctorTable(a.stdout, checks)
	}
	return doctorExit(checks)
}

// doctorReport is doctor -o json.
type doctorReport struct {
	OK     bool          `json:"ok"`
	Checks []doctorCheck `json:"checks"`
}

type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

func doctorJSON(checks []doctor.Check) doctorReport {
	r := doctorReport{OK: true, Checks: []doctorCheck{}}
	for _, c := range checks {
		r.Checks = append(r.Checks, doctorCheck{Name: c.Name, Status: string(c.Status), Detail: c.Detail})
		if c.Status == doctor.CheckFailed {
			r.OK = false
		}
	}
	return r
}

// writeDoctorTable prints one row per check; a status other than ok in
// capitals, so that it stands out.
func writeDoctorTable(w io.Writer, checks []doctor.Check) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
	for _, c := range checks {
		status := string(c.Status)
		if c.Status != doctor.CheckOK {
			status = strings.ToUpper(status)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, status, c.Detail)
	}
}

// doctorExit decides doctor's exit status from its checks, with the one
// line that says why when it is not 0.
func doctorExit(checks []doctor.Check) error {
	var failed, warned []string
	for _, c := range checks {
		switch c.Status {
		case doctor.CheckFailed:
			failed = append(failed, c.Name)
		case doctor.CheckWarning:
			warned = append(warned, c.Name)
		}
	}
	switch {
	case len(failed) > 0:
		return exit.With(doctorFailed, fmt.Errorf("doctor: a run needs what was refused: %s (see the table for why and what to do)",
			strings.Join(failed, ", ")))
	case len(warned) > 0:
		return exit.With(doctorWarning, fmt.Errorf("doctor: runs would work, with warnings: %s (see the table)", strings.Join(warned, ", ")))
	}
	return nil
}
