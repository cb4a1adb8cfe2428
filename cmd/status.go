package cmd

// `leaderrun status` and `leaderrun history`, read through one helper:
// status shows one lease (its View) as rows or JSON, with a row per slot
// when it has several; history the recent runs, newest first, from the
// history its blobs keep in their metadata (lease/record_history.go).

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
)

// readOptions are the options of status, history and list: where the
// lease (or container) is, and text or JSON.
type readOptions struct {
	loc    locationOptions
	output string
}

// newReadCmd gives c, status or history, the flags of one lease and -o,
// and makes it read the lease once their checks pass (one listing, no lease
// operation) and show what it read.
func newReadCmd(a *app, c *cobra.Command, show func(o *readOptions, v *lease.View) error) *cobra.Command {
	o := &readOptions{}
	c.Args = unexpectedArgs
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := o.loc.complete(c.Flags()); err != nil {
			return err
		}
		if err := checkOutput(o.output); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(c.Context(), operatorTimeout)
		defer cancel()
		_, v, err := o.loc.view(ctx, a.log)
		if err != nil {
			return err
		}
		return show(o, v)
	}
	o.loc.addFlags(c.Flags())
	addOutputFlag(c.Flags(), &o.output)
	return c
}

func addOutputFlag(fs *pflag.FlagSet, output *string) {
	fs.StringVarP(output, "output", "o", "text", "the output `FORMAT`: text or json")
}

func checkOutput(output string) error {
	if output != "text" && output != "json" {
		return exit.Usagef("invalid --output %s: use text or json", exit.Quote(output))
	}
	return nil
}

func newStatusCmd(a *app) *cobra.Command {
	return newReadCmd(a, &cobra.Command{
		Use:   "status -l NAME [-o text|json]",
		Short: "Show who holds a lease, since when, and what ran last",
		Long: `status lists the lease's blobs (one request, no lease operation: the slots,
the pause and the done markers come with it) and prints its URL
(without any secret), the lease state (available, leased, expired, breaking,
broken, or never held), the holder, the fencing term, since when it is held,
and the last run: who ran it, when it started and ended, and its exit status.
Times are the storage service's. Exit status 0, or 69 when the storage cannot
be read.`,
		Example: `  leaderrun status -l cron/report
  leaderrun status -l cron/report -o json | jq .holder`,
	}, func(o *readOptions, v *lease.View) error {
		if o.output == "json" {
			j := toLeaseStatusJSON(v)
			j.Lease = "" // status names no lease: it was asked for one
			return writeJSON(a.stdout, j)
		}
		writeStatusText(a.stdout, o.loc.lease, v.URL, v.Slot(0).Props, v.Paused(), v.Date)
		writeTriggerText(a.stdout, v)
		writeSlotsText(a.stdout, v)
		return nil
	})
}

// statusJSON is status -o json: camelCase keys as the Azure CLI prints them;
// absent values are null.
type statusJSON struct {
	URL        string       `json:"url"`
	State      string       `json:"state"`
	Holder     *string      `json:"holder"`
	Term       *int64       `json:"term"`
	AcquiredAt *time.Time   `json:"acquiredAt"`
	LastRun    *lastRunJSON `json:"lastRun"`
	// A scheduled lease (--schedule): the schedule, the occurrence last
	// started, the next one, and one that never ran (schedule.go).
	Schedule         *string    `json:"schedule,omitempty"`
	LastOccurrence   *time.Time `json:"lastOccurrence,omitempty"`
	NextOccurrence   *time.Time `json:"nextOccurrence,omitempty"`
	MissedOccurrence *time.Time `json:"missedOccurrence,omitempty"`
	DueOccurrence    *time.Time `json:"dueOccurrence,omitempty"`
}

type lastRunJSON struct {
	Holder   *string    `json:"holder"`
	Start    *time.Time `json:"start"`
	End      *time.Time `json:"end"`
	ExitCode *int       `json:"exitCode"`
}

func toStatusJSON(url string, p *lease.Properties) statusJSON {
	s := statusJSON{URL: url, State: string(p.State), Holder: stringOrNull(p.Holder), Term: termOrNull(p.Term), AcquiredAt: timeOrNull(p.AcquiredAt)}
	if r := p.LastRun; r != nil {
		s.LastRun = &lastRunJSON{Holder: stringOrNull(r.Holder), Start: timeOrNull(r.Start), End: timeOrNull(r.End), ExitCode: r.ExitCode}
	}
	return s
}

// stringOrNull, termOrNull and timeOrNull give a value for JSON: null when
// it is not known (empty, no term, the zero time); times in UTC.
func stringOrNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func termOrNull(term int64) *int64 {
	if term <= 0 {
		return nil
	}
	return &term
}

func timeOrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// writeStatusText prints status's rows; pause is the pause in force (nil if
// none), now the service's Date of the read.
func writeStatusText(w io.Writer, name, url string, p *lease.Properties, pause *lease.Pause, now time.Time) {
	if now.IsZero() {
		now = time.Now()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	defer tw.Flush()
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("lease", exit.Cut(name))
	row("url", url)
	if pause != nil {
		row("paused", pauseRow(pause, now))
	}
	if !p.Exists {
		row("state", "never held (the blob does not exist yet)")
		return
	}
	row("state", string(p.State))
	if p.Holder != "" {
		holder := p.Holder
		if !p.State.Held() {
			holder += " (last holder)"
		}
		row("holder", holder)
	}
	if p.Term > 0 {
		row("term", fmt.Sprint(p.Term))
	}
	if !p.AcquiredAt.IsZero() {
		row("since", stamp(p.AcquiredAt, now))
	}
	if r := p.LastRun; r != nil {
		var b strings.Builder
		b.WriteString(r.Holder)
		if !r.Start.IsZero() {
			fmt.Fprintf(&b, ", started %s", stamp(r.Start, now))
		}
		switch {
		case !r.End.IsZero() && r.ExitCode != nil:
			fmt.Fprintf(&b, ", ended %s, exit %d", stamp(r.End, now), *r.ExitCode)
		case !r.End.IsZero():
			fmt.Fprintf(&b, ", ended %s", stamp(r.End, now))
		default:
			b.WriteString(", not ended")
		}
		row("last run", b.String())
	} else {
		row("last run", "none recorded")
	}
	scheduleRows(row, p, now)
}

// stamp prints a service time with how long ago it was by the service's clock.
func stamp(t, now time.Time) string {
	return fmt.Sprintf("%s (%s ago)", rfc3339(t), max(now.Sub(t).Truncate(time.Second), 0))
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// pauseRow describes a pause in force: "since T (3m ago), until resume: reason".
func pauseRow(p *lease.Pause, now time.Time) string {
	var b strings.Builder
	if !p.Since.IsZero() {
		fmt.Fprintf(&b, "since %s, ", stamp(p.Since, now))
	}
	b.WriteString("until " + timeOr(p.Until, "resume"))
	if p.Reason != "" {
		b.WriteString(": " + p.Reason)
	}
	return b.String()
}

// writeTriggerText adds to status's text the trigger no run took yet.
func writeTriggerText(w io.Writer, v *lease.View) {
	t := v.PendingTrigger()
	if t == nil {
		return
	}
	now := cmp.Or(v.Date, time.Now())
	text := "pending"
	if !t.At.IsZero() {
		text += " since " + stamp(t.At, now)
	}
	if t.By != "" {
		text += " by " + t.By
	}
	if t.Reason != "" {
		text += ": " + t.Reason
	}
	fmt.Fprintf(w, "trigger: %s (the next invocation of the lease's line runs it)\n", text)
}

// writeSlotsText adds to status's text one line per slot when the lease
// has more than one, and the hosts that are done.
func writeSlotsText(w io.Writer, l *lease.View) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	defer tw.Flush()
	if l.SlotCount > 1 {
		fmt.Fprintf(tw, "slots:\t%d of %d leased\n", l.Held(), l.SlotCount)
		for i := range l.SlotCount {
			fmt.Fprintf(tw, "  slot %d:\t%s\n", i, slotCells(l.Slot(i).Props, l.Date))
		}
	}
	if len(l.DoneHosts) > 0 {
		fmt.Fprintf(tw, "done hosts:\t%d: %s\n", len(l.DoneHosts), joinHosts(l.DoneHosts))
	}
}

// joinHosts lists the first 20 hosts.
func joinHosts(hosts []string) string {
	const most = 20
	if len(hosts) <= most {
		return strings.Join(hosts, ", ")
	}
	return strings.Join(hosts[:most], ", ") + fmt.Sprintf(", … (%d more; -o json lists all)", len(hosts)-most)
}

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
  leaderrun history -l cron/report -o json |
    jq '[.[] | select(.exitCode != 0)] | length'`,
	}, func(o *readOptions, v *lease.View) error {
		if o.output == "json" {
			return writeJSON(a.stdout, historyJSON(v.Runs()))
		}
		return writeHistoryText(a.stdout, v.Runs(), v.Date)
	})
}

// runJSON is one run in history -o json; unknown values are null. A run of
// a schedule or a trigger says why it ran; the others leave those keys out
// (they do not apply).
type runJSON struct {
	Holder      *string    `json:"holder"`
	Term        *int64     `json:"term"`
	Start       *time.Time `json:"start"`
	End         *time.Time `json:"end"`
	ExitCode    *int       `json:"exitCode"`
	Trigger     string     `json:"trigger,omitempty"`     // schedule, retry or manual
	Attempt     int        `json:"attempt,omitempty"`     // the attempt at the occurrence
	Occurrence  *time.Time `json:"occurrence,omitempty"`  // the occurrence, or a trigger's time
	TriggeredBy string     `json:"triggeredBy,omitempty"` // a manual run: who triggered it
	Reason      string     `json:"reason,omitempty"`      // and why
}

func historyJSON(runs []lease.Run) []runJSON {
	out := make([]runJSON, 0, len(runs))
	for _, r := range runs {
		j := runJSON{Holder: stringOrNull(r.Holder), Term: termOrNull(r.Term), Start: timeOrNull(r.Start), End: timeOrNull(r.End), ExitCode: r.ExitCode}
		if c := r.Cause; c != nil {
			j.Trigger, j.Attempt, j.Occurrence, j.TriggeredBy, j.Reason = c.Trigger, c.Attempt, timeOrNull(c.Occurrence), c.By, c.Reason
		}
		out = append(out, j)
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
	// Why each run ran, when any of them says: a schedule's occurrence, a
	// retry, a trigger ("manual by WHO: REASON").
	why := slices.ContainsFunc(runs, func(r lease.Run) bool { return r.Cause != nil })
	if why {
		fmt.Fprintln(tw, "HOLDER\tTERM\tSTART\tEND\tEXIT\tWHY")
	} else {
		fmt.Fprintln(tw, "HOLDER\tTERM\tSTART\tEND\tEXIT")
	}
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
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", cutText(cmp.Or(r.Holder, "-"), listTextHolderMax), term, start, end, exit)
		if why {
			row += "\t-"
			if r.Cause != nil {
				row = row[:len(row)-1] + r.Cause.String()
			}
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}
