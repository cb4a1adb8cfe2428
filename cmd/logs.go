package cmd

// `leaderrun logs`: a run's kept output (--keep-output), as COMMAND wrote
// it, or as JSON with the run's record.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
)

// logsNoOutput is logs' exit status when the run asked for kept no output,
// as kubectl logs and grep exit 1 when there is nothing to show.
const logsNoOutput = 1

// logsOptions are logs': the lease, which run, and the format.
type logsOptions struct {
	loc    locationOptions
	term   int64 // --term; 0: the newest run that kept its output
	slot   int   // --slot; -1: any
	output string
}

func newLogsCmd(a *app) *cobra.Command {
	o := &logsOptions{}
	c := &cobra.Command{
		Use:   "logs -l NAME [--term N] [-o text|json]",
		Short: "Print the output a run kept (--keep-output)",
		Long: `logs prints the end of what COMMAND wrote to its stdout and stderr in one
run, interleaved as written: the last --keep-output bytes (64 KiB by default),
which the host that ran it stored in a blob of the container when the run
ended. Without --term, the newest run that kept its output; with --term N, the
run of term N (with --slots, --slot I picks the slot). Text prints the bytes
as COMMAND wrote them, and says on stderr which run they are from; -o json
prints one object: holder, term, slot, start, end, exitCode, written (the
bytes COMMAND wrote in all) and output (invalid UTF-8 shows as U+FFFD).

Each slot keeps the output of as many runs as history shows (20). A run
keeps none when --keep-output was 0, when leaderrun's stdout or stderr was a
terminal, or when its upload failed (one WARNING on the host that ran it).
Anyone who can read the container can read the output: keep secrets out of
it. Exit status 0, 1 when that run kept no output (as kubectl logs and grep
do when there is nothing to show), 64 on a usage error, 69 when the storage
cannot be read.`,
		Example: `  leaderrun logs -l cron/report
  leaderrun logs -l cron/report --term 42 | tail -20
  leaderrun logs -l cron/report -o json | jq -r .output`,
		Args: unexpectedArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.complete(c); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context(), operatorTimeout)
			defer cancel()
			return runLogs(ctx, a, o)
		},
	}
	o.loc.addFlags(c.Flags())
	c.Flags().Int64Var(&o.term, "term", 0, "the run of term `N`; default: the newest run that kept its output")
	c.Flags().IntVar(&o.slot, "slot", -1, "with --slots: the run on slot `I` (0 to N-1); default: any")
	addOutputFlag(c.Flags(), &o.output)
	return c
}

func (o *logsOptions) complete(c *cobra.Command) error {
	if err := o.loc.complete(c.Flags()); err != nil {
		return err
	}
	if o.term < 0 || c.Flags().Changed("term") && o.term == 0 {
		return exit.Usagef("invalid --term %d: a term is 1 or more", o.term)
	}
	if o.slot < -1 || o.slot >= lease.MaxSlots {
		return exit.Usagef("invalid --slot %d: use 0 to %d", o.slot, lease.MaxSlots-1)
	}
	return checkOutput(o.output)
}

// logsJSON is logs -o json: the run's record and its output.
type logsJSON struct {
	Holder   *string    `json:"holder"`
	Term     *int64     `json:"term"`
	Slot     int        `json:"slot"`
	Start    *time.Time `json:"start"`
	End      *time.Time `json:"end"`
	ExitCode *int       `json:"exitCode"`
	Written  int64      `json:"written"`
	Output   string     `json:"output"`
}

// runLogs lists the lease's kept outputs (one request), picks the run and
// reads its output (one more).
func runLogs(ctx context.Context, a *app, o *logsOptions) error {
	client, err := o.loc.client(a.log)
	if err != nil {
		return err
	}
	name := exit.Quote(o.loc.lease)
	outs, err := client.Outputs(ctx)
	if err != nil {
		return exit.With(exit.Unavailable, fmt.Errorf("cannot read the kept output of lease %s: %w", name, err))
	}
	var pick []lease.Output
	for _, out := range outs {
		if (o.term == 0 || out.Term == o.term) && (o.slot < 0 || out.Slot == o.slot) {
			pick = append(pick, out)
		}
	}
	none := func() error {
		switch {
		case o.term == 0 && len(outs) == 0:
			return exit.With(logsNoOutput, fmt.Errorf("lease %s: no run kept its output (see --keep-output)", name))
		case o.term == 0:
			return exit.With(logsNoOutput, fmt.Errorf("lease %s: no run on slot %d kept its output", name, o.slot))
		}
		return exit.With(logsNoOutput, fmt.Errorf("lease %s: the run of term %d kept no output "+
			"(--keep-output 0, a terminal, a failed upload, or older than the runs kept)", name, o.term))
	}
	switch {
	case len(pick) == 0:
		return none()
	case o.term != 0 && len(pick) > 1:
		return exit.Usagef("lease %s: term %d ran on %s: give --slot", name, o.term, plural(len(pick), "slot"))
	}
	out, err := client.ReadOutput(ctx, pick[0].Blob)
	switch {
	case errors.Is(err, lease.ErrNoOutput):
		return none() // deleted since the listing: older than the runs kept
	case err != nil:
		return exit.With(exit.Unavailable, fmt.Errorf("cannot read the kept output of lease %s: %w", name, err))
	}
	if o.output == "json" {
		return writeJSON(a.stdout, logsJSON{Holder: stringOrNull(out.Holder), Term: termOrNull(out.Term), Slot: out.Slot,
			Start: timeOrNull(out.Start), End: timeOrNull(out.End), ExitCode: out.ExitCode, Written: out.Written, Output: string(out.Bytes)})
	}
	args := []any{"lease", exit.Cut(o.loc.lease), "term", out.Term, "holder", out.Holder, "end", rfc3339(out.End)}
	if out.ExitCode != nil {
		args = append(args, "exit", *out.ExitCode)
	}
	if out.Slot != 0 {
		args = append(args, "slot", out.Slot)
	}
	args = append(args, "bytes", len(out.Bytes), "written", out.Written)
	a.log.Info("the output a run kept", args...)
	_, err = a.stdout.Write(out.Bytes)
	return err
}
