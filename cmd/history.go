package cmd

// `leaderrun history`: the recent runs of a lease, newest first, from the
// history its blobs keep in their metadata (lease/record_history.go).

import (
	"cmp"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/leaderrun/leaderrun/lease"
)

func newHistoryCmd(a *app) *cobra.Command {
	return newReadCmd(a, &cobra.Command{
		Use:   "history -l NAME [-o text|json]",
		Short: "Show the recent runs of a lease, newest first",
		Long: `history prints the runs the lease keeps in its metadata, newest first: the
last 20 of each slot (merged across slots), with holder, term, start, end and
exit status. It costs one listing of NAME (no lease operation). Times are the
storage service's.

A run whose holder lost the lease (or died) before it could record its end
shows its end and exit status as unknown. A run in progress shows as running.

-o json prints an array of {holder, term, start, end, exitCode}; unknown
values are null. Exit status 0, or 69 when the storage cannot be read.`,
		Example: `  leaderrun history -l cron/report
  leaderrun history -l cron/report -o json | jq '[.[] | select(.exitCode != 0)] | length'`,
	}, func(o *readOptions, v *lease.View) error {
		if o.output == "json" {
			return writeJSON(a.stdout, historyJSON(v.Runs()))
		}
		return writeHistoryText(a.stdout, v.Runs(), v.Date)
	})
}

// runJSON is one run in history -o json; unknown values are null.
type runJSON struct {
	Holder   *string    `json:"holder"`
	Term     *int64     `json:"term"`
	Start    *time.Time `json:"start"`
	End      *time.Time `json:"end"`
	ExitCode *int       `json:"exitCode"`
}

func historyJSON(runs []lease.Run) []runJSON {
	out := make([]runJSON, 0, len(runs))
	for _, r := range runs {
		out = append(out, runJSON{Holder: stringOrNull(r.Holder), Term: termOrNull(r.Term), Start: timeOrNull(r.Start), End: timeOrNull(r.End), ExitCode: r.ExitCode})
	}
	return out
}

// writeHistoryText prints the runs as an aligned table; ages are by now,
// the service's Date.
func writeHistoryText(w io.Writer, runs []lease.Run, now time.Time) error {
	if len(runs) == 0 {
		_, err := fmt.Fprintln(w, "no run recorded")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOLDER\tTERM\tSTART\tEND\tEXIT")
	for _, r := range runs {
		term, end, exit := "-", "-", "-"
		if r.Term > 0 {
			term = strconv.FormatInt(r.Term, 10)
		}
		switch {
		case r.Running:
			end = "running"
		case r.EndUnknown():
			end, exit = "unknown", "unknown (lost its lease)"
		default:
			end, exit = timeOr(r.End, "unknown"), "unknown"
			if r.ExitCode != nil {
				exit = strconv.Itoa(*r.ExitCode)
			}
		}
		start := rfc3339(r.Start) + " (" + shortAgo(r.Start, now) + ")"
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cutText(cmp.Or(r.Holder, "-"), listTextHolderMax), term, start, end, exit)
	}
	return tw.Flush()
}
