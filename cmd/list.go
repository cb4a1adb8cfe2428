package cmd

// `leaderrun list`: every lease of the container from one paged listing,
// rendered as a table within the terminal or as JSON (an array of the
// objects status prints, built by the same function). The rendering is
// pure: the command reads the views.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
)

func newListCmd(a *app) *cobra.Command {
	o := &readOptions{}
	c := &cobra.Command{
		Use:   "list [-o text|json]",
		Short: "List every lease of the container with its state, holder and last run",
		Long: `list lists the container's blobs once (one request per 5,000 blobs, lease
state and metadata included, each page with its own deadline), and the done
markers of the leases that have any, and prints one row per lease: state,
holder, term, since when it is held, the last run that is over and how it
ended (in the words status and history use), and notes (a pause in force,
the schedule, hosts done). A lease of several slots gets a summary row and
one row per slot; its slot and marker blobs are not listed as leases of their
own. The table keeps within the terminal's width (COLUMNS, else the
terminal's, else 80), cutting long names, holders, runs and notes with "…".
Ages are by the storage service's clock (the listing's Date).

-o json prints an array of the objects that status -o json prints, each with
"lease", its name, and every value whole. Exit status 0, or 69 when the
storage cannot be read.`,
		Example: `  leaderrun list
  leaderrun list --container jobs -o json |
    jq -r '.[] | select(.state == "leased") | .lease'`,
		Args: unexpectedArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := envDefaults(c.Flags()); err != nil {
				return err
			}
			if err := checkOutput(o.output); err != nil {
				return err
			}
			return runList(c.Context(), a, o)
		},
	}
	o.loc.addContainerFlags(c.Flags())
	addOutputFlag(c.Flags(), &o.output)
	return c
}

// runList reads every lease of the container. The listing has no deadline
// of its own: each page has one (a container of tens of thousands of blobs
// takes many pages), and a listing longer than the lease package's bound on
// pages is an error.
func runList(ctx context.Context, a *app, o *readOptions) error {
	client, err := lease.NewContainer(o.loc.clientConfig("", a.log))
	if err != nil {
		return leader.StorageExit(err)
	}
	leases, err := client.Views(ctx)
	if err != nil {
		return exit.With(exit.Unavailable, fmt.Errorf("cannot list container %s: %w", exit.Quote(o.loc.container), err))
	}
	if o.output == "json" {
		return writeJSON(a.stdout, listJSON(leases))
	}
	return writeListText(a.stdout, outputWidth(a.stdout), leases)
}

// pauseJSON is a pause in JSON: until is null when open-ended.
type pauseJSON struct {
	Reason *string    `json:"reason"`
	Since  *time.Time `json:"since"`
	Until  *time.Time `json:"until"`
	Drain  bool       `json:"drain,omitempty"` // pause --drain: the holders' leases were broken too; left out otherwise
}

// slotStatusJSON is one slot in a lease's `slots` array.
type slotStatusJSON struct {
	Slot int `json:"slot"`
	statusJSON
}

// leaseStatusJSON is one lease in `list -o json` and `status -o json`: the
// keys of statusJSON for slot 0 (the blob NAME), `pause` (null, or the pause
// in force at the service's Date), `deputy` (null, or the waiting follower
// that stands by: its holder and since), and only when they apply `slots` (every
// slot blob, when N > 1) and `doneHosts`; `lease`, its name, in list only.
type leaseStatusJSON struct {
	Lease string `json:"lease,omitempty"`
	statusJSON
	Pause     *pauseJSON       `json:"pause"`
	Deputy    *deputyJSON      `json:"deputy"`
	Slots     []slotStatusJSON `json:"slots,omitempty"`
	DoneHosts []string         `json:"doneHosts,omitempty"`
}

// deputyJSON is the waiting follower that stands by to take over.
type deputyJSON struct {
	Holder string     `json:"holder"`
	Since  *time.Time `json:"since"`
}

// toLeaseStatusJSON converts one lease: status prints it, and list an
// array of them.
func toLeaseStatusJSON(l *lease.View) leaseStatusJSON {
	s0 := l.Slot(0)
	j := leaseStatusJSON{Lease: l.Name, statusJSON: toStatusJSON(l, s0), DoneHosts: l.DoneHosts}
	scheduleJSON(&j.statusJSON, s0.Props, l.Date)
	if p := l.Paused(); p != nil {
		j.Pause = &pauseJSON{Reason: stringOrNull(p.Reason), Since: timeOrNull(p.Since), Until: timeOrNull(p.Until), Drain: p.Drain}
	}
	if d := l.Deputy; d != nil {
		j.Deputy = &deputyJSON{Holder: d.Holder, Since: timeOrNull(d.Since)}
	}
	if l.SlotCount > 1 {
		j.Slots = []slotStatusJSON{}
		for _, s := range l.Slots {
			j.Slots = append(j.Slots, slotStatusJSON{Slot: s.Index, statusJSON: toStatusJSON(l, s)})
		}
	}
	return j
}

// listJSON is `list -o json`: an array, empty rather than null.
func listJSON(leases []lease.View) []leaseStatusJSON {
	out := make([]leaseStatusJSON, 0, len(leases))
	for i := range leases {
		out = append(out, toLeaseStatusJSON(&leases[i]))
	}
	return out
}

// writeListText prints the table within width: one row per lease, and for
// a lease of N > 1 slots a summary row and one indented row per slot. Ages
// are by the service's Date.
func writeListText(w io.Writer, width int, leases []lease.View) error {
	t := table{header: []string{"LEASE", "STATE", "HOLDER", "TERM", "SINCE", "LAST RUN", "NOTES"},
		cut: []bool{true, false, true, false, false, true, true}, gap: 2}
	for i := range leases {
		l := &leases[i]
		notes := leaseNotes(l)
		if l.SlotCount <= 1 {
			t.rows = append(t.rows, append(append([]string{l.Name}, slotCells(l, l.Slot(0).Props, l.Date)...), notes))
			continue
		}
		t.rows = append(t.rows, []string{l.Name, fmt.Sprintf("%d/%d leased", l.Held(), l.SlotCount), "-", "-", "-", "-", notes})
		for _, s := range l.Slots {
			t.rows = append(t.rows, append([]string{"  slot " + strconv.Itoa(s.Index)}, slotCells(l, s.Props, l.Date)...))
		}
	}
	return t.write(w, width)
}

// slotCells are STATE, HOLDER, TERM, SINCE and LAST RUN of lease blob p of
// l: the newest run that is over (a running one shows as the state, holder
// and since), by its fate, and where it ran when not on HOLDER.
func slotCells(l *lease.View, p *lease.Properties, now time.Time) []string {
	if p.State == lease.StateAbsent {
		return []string{"never held", "-", "-", "-", "-"}
	}
	holder, term, since := "-", "-", "-"
	if p.Holder != "" {
		holder = p.Holder
	}
	if p.Term > 0 {
		term = strconv.FormatInt(p.Term, 10)
	}
	if !p.AcquiredAt.IsZero() {
		since = shortAgo(p.AcquiredAt, now)
	}
	last := "-"
	for _, r := range lease.ReadHistory(p.Metadata, p.State.Held()) {
		if f := l.Fate(r); f.Over() {
			last = lastRunText(r, f, now, p.Holder)
			break
		}
	}
	return []string{string(p.State), holder, term, since, last}
}

// lastRunText describes a run that is over by its fate, when and, unless
// it is holder (the row's HOLDER), where: "exited 0, 5m ago on vm-3", "lost
// its lease, started 1h ago".
func lastRunText(r lease.Run, f lease.Fate, now time.Time, holder string) string {
	when := "started " + shortAgo(r.Start, now)
	if !r.End.IsZero() {
		when = shortAgo(r.End, now)
	}
	if r.Holder == holder && holder != "" {
		return f.String() + ", " + when
	}
	return f.String() + ", " + when + " on " + cmp.Or(r.Holder, "an unknown host")
}

func leaseNotes(l *lease.View) string {
	var notes []string
	if p := l.Paused(); p != nil {
		n := "PAUSED"
		if p.Drain {
			n = "DRAINED"
		}
		if !p.Until.IsZero() {
			n += " until " + p.Until.Format(time.RFC3339)
		}
		if p.Reason != "" {
			n += ": " + p.Reason
		}
		notes = append(notes, n)
	}
	if v, ok := viewSchedule(l.Slot(0).Props, l.Date); ok {
		n := "schedule " + v.spec
		if !v.next.IsZero() {
			n += ", next " + v.next.Format(time.RFC3339)
		}
		if !v.missed.IsZero() {
			n += ", MISSED " + v.missed.Format(time.RFC3339)
		}
		notes = append(notes, n)
	}
	if d := l.Deputy; d != nil {
		notes = append(notes, "deputy "+d.Holder)
	}
	if n := len(l.DoneHosts); n == 1 {
		notes = append(notes, "1 host done")
	} else if n > 1 {
		notes = append(notes, strconv.Itoa(n)+" hosts done")
	}
	if len(notes) == 0 {
		return "-"
	}
	return strings.Join(notes, "; ")
}

// shortAgo is how long before now t was, in its largest whole unit:
// "42s ago", "3m ago", "5h ago", "3d ago" (never negative).
func shortAgo(t, now time.Time) string {
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h ago"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d ago"
}
