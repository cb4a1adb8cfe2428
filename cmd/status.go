package cmd

// `leaderrun status` and `leaderrun history`, read through one helper:
// status shows one lease (its View) as rows or JSON, with a table of its
// slots when it has several; history the recent runs, newest first, from
// the history its blobs keep in their metadata (lease/record_history.go).
// Each run is shown by its fate (lease.View.Fate), in the words list uses.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
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
// and makes it read the lease once their checks pass (lease.Blob.View: a
// read and two listings, no lease operation) and show what it read.
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
		Long: `status reads the lease blob and lists the lease's other blobs (the slots,
the pause marker and the done markers: no lease operation) and prints its URL
(without any secret), the lease state (available, leased, expired, breaking,
broken, or never held), the holder, the fencing term, since when it is held,
and the last run: how it ended (running, exited N, killed by signal N, lost
its lease, broken by an operator, drained), who ran it, when it started and
ended. A lease of several slots adds a table of its slots. Lines are cut to
the terminal's width (COLUMNS), with "…"; -o json has the whole values.
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
		if err := writeStatusText(a.stdout, outputWidth(a.stdout), o.loc.lease, v); err != nil {
			return err
		}
		writeTriggerText(a.stdout, v)
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

// lastRunJSON is a slot's last run in status -o json.
type lastRunJSON struct {
	Holder   *string    `json:"holder"`
	Start    *time.Time `json:"start"`
	End      *time.Time `json:"end"`
	ExitCode *int       `json:"exitCode"`
	Running  bool       `json:"running"`
	Fate     string     `json:"fate"` // lease.Fate in words, as the text shows it
}

// toStatusJSON converts slot s of lease v.
func toStatusJSON(v *lease.View, s lease.Slot) statusJSON {
	p := s.Props
	j := statusJSON{URL: s.URL, State: string(p.State), Holder: stringOrNull(p.Holder), Term: termOrNull(p.Term), AcquiredAt: timeOrNull(p.AcquiredAt)}
	if r := p.LastRun; r != nil {
		f := v.Fate(*r)
		j.LastRun = &lastRunJSON{Holder: stringOrNull(r.Holder), Start: timeOrNull(r.Start), End: timeOrNull(r.End), ExitCode: r.ExitCode,
			Running: !f.Over(), Fate: f.String()}
	}
	return j
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

// writeStatusText prints status's rows within width: slot 0's state,
// holder, term and last run, the pause in force, the schedule, the done
// hosts; and for a lease of several slots a table of them.
func writeStatusText(w io.Writer, width int, name string, v *lease.View) error {
	now := v.Date
	if now.IsZero() {
		now = time.Now()
	}
	var kv keyValues
	kv.add("lease", name)
	kv.add("url", v.URL)
	if pause := v.Paused(); pause != nil {
		kv.add("paused", pauseRow(pause, now))
	}
	if p := v.Slot(0).Props; !p.Exists {
		kv.add("state", "never held (the blob does not exist yet)")
	} else {
		slotRows(&kv, v, p, now)
	}
	if d := v.Deputy; d != nil {
		kv.add("deputy", deputyText(d, now))
	}
	if len(v.DoneHosts) > 0 {
		kv.add("done hosts", fmt.Sprintf("%d: %s", len(v.DoneHosts), joinHosts(v.DoneHosts)))
	}
	if v.SlotCount > 1 {
		kv.add("slots", fmt.Sprintf("%d of %d leased", v.Held(), v.SlotCount))
	}
	if err := kv.write(w, width); err != nil {
		return err
	}
	if v.SlotCount <= 1 {
		return nil
	}
	t := table{header: []string{"SLOT", "STATE", "HOLDER", "TERM", "SINCE", "LAST RUN"}, cut: []bool{false, false, true, false, false, true},
		gap: 2, indent: "  "}
	for i := range v.SlotCount {
		s := v.Slot(i)
		t.rows = append(t.rows, append([]string{strconv.Itoa(i)}, slotCells(v, s.Props, now)...))
	}
	return t.write(w, width)
}

// deputyText is the deputy as status shows it: "vm-2 (standing by since
// T (3m ago))".
func deputyText(d *lease.Deputy, now time.Time) string {
	if d.Since.IsZero() {
		return d.Holder + " (standing by)"
	}
	return d.Holder + " (standing by since " + stamp(d.Since, now) + ")"
}

// slotRows are status's rows of one existing lease blob p of v.
func slotRows(kv *keyValues, v *lease.View, p *lease.Properties, now time.Time) {
	kv.add("state", string(p.State))
	if p.Holder != "" {
		holder := p.Holder
		if !p.State.Held() {
			holder += " (last holder)"
		}
		kv.add("holder", holder)
	}
	if p.Term > 0 {
		kv.add("term", fmt.Sprint(p.Term))
	}
	if !p.AcquiredAt.IsZero() {
		kv.add("since", stamp(p.AcquiredAt, now))
	}
	if r := p.LastRun; r != nil {
		kv.add("last run", v.Fate(*r).String()+" on "+cmp.Or(r.Holder, "an unknown host"))
		if !r.Start.IsZero() {
			kv.add("  started", stamp(r.Start, now))
		}
		if !r.End.IsZero() {
			kv.add("  ended", stamp(r.End, now))
		}
	} else {
		kv.add("last run", "none recorded")
	}
	scheduleRows(kv.add, p, now)
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
	if p.Drain {
		b.WriteString(", drained")
	}
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
how each ended, in the words status and list use: running, exited N, killed
by signal N, lost its lease (its holder lost the lease or died before it
could record its end), broken by an operator, drained. It costs a read of the
lease blob and a listing of its other blobs (no lease operation). Lines are
cut to the terminal's width (COLUMNS), with "…". Times are the storage
service's.

The table shows how long each run took (from its start to its end, by the
service's clock; "-" while running or when its end is unknown). -o json
prints an array of {holder, term, start, end, exitCode, running, fate};
unknown values are null. Exit status 0, or 69 when the storage cannot
be read.`,
		Example: `  leaderrun history -l cron/report
  leaderrun history -l cron/report -o json |
    jq '[.[] | select(.running | not) | select(.exitCode != 0)] | length'`,
	}, func(o *readOptions, v *lease.View) error {
		if o.output == "json" {
			return writeJSON(a.stdout, historyJSON(v))
		}
		return writeHistoryText(a.stdout, outputWidth(a.stdout), v)
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
	Running     bool       `json:"running"`
	Fate        string     `json:"fate"`                  // lease.Fate in words, as the text shows it
	Trigger     string     `json:"trigger,omitempty"`     // schedule, retry or manual
	Attempt     int        `json:"attempt,omitempty"`     // the attempt at the occurrence
	Occurrence  *time.Time `json:"occurrence,omitempty"`  // the occurrence, or a trigger's time
	TriggeredBy string     `json:"triggeredBy,omitempty"` // a manual run: who triggered it
	Reason      string     `json:"reason,omitempty"`      // and why
}

func historyJSON(v *lease.View) []runJSON { return runsJSON(v.Runs(), v.Fate) }

// runsJSON is runs in history -o json, each with its fate.
func runsJSON(runs []lease.Run, fate func(lease.Run) lease.Fate) []runJSON {
	out := make([]runJSON, 0, len(runs))
	for _, r := range runs {
		f := fate(r)
		j := runJSON{Holder: stringOrNull(r.Holder), Term: termOrNull(r.Term), Start: timeOrNull(r.Start), End: timeOrNull(r.End),
			ExitCode: r.ExitCode, Running: !f.Over(), Fate: f.String()}
		if c := r.Cause; c != nil {
			j.Trigger, j.Attempt, j.Occurrence, j.TriggeredBy, j.Reason = c.Trigger, c.Attempt, timeOrNull(c.Occurrence), c.By, c.Reason
		}
		out = append(out, j)
	}
	return out
}

// writeHistoryText prints the runs as a table within width: who, the term,
// the start (RFC 3339, the service's clock), how long the run took, and its
// fate.
func writeHistoryText(w io.Writer, width int, v *lease.View) error {
	return writeRunsText(w, width, v.Runs(), v.Fate)
}

// writeRunsText is writeHistoryText's table of runs, each with its fate.
func writeRunsText(w io.Writer, width int, runs []lease.Run, fate func(lease.Run) lease.Fate) error {
	if len(runs) == 0 {
		_, err := fmt.Fprintln(w, "no run recorded")
		return err
	}
	t := table{header: []string{"HOLDER", "TERM", "START", "TOOK", "FATE"}, cut: []bool{true, false, false, false, true}, gap: 2}
	// Why each run ran, when any of them says: a schedule's occurrence, a
	// retry, a trigger ("manual by WHO: REASON").
	why := slices.ContainsFunc(runs, func(r lease.Run) bool { return r.Cause != nil })
	if why {
		t.header = append(t.header, "WHY")
		t.cut = append(t.cut, true)
	}
	for _, r := range runs {
		term, took := "-", "-"
		if r.Term > 0 {
			term = strconv.FormatInt(r.Term, 10)
		}
		if !r.End.IsZero() {
			took = max(r.End.Sub(r.Start), 0).String()
		}
		row := []string{cmp.Or(r.Holder, "-"), term, rfc3339(r.Start), took, fate(r).String()}
		if why {
			why := "-"
			if r.Cause != nil {
				why = r.Cause.String()
			}
			row = append(row, why)
		}
		t.rows = append(t.rows, row)
	}
	return t.write(w, width)
}
