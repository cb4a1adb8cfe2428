package cmd

// The model of `leaderrun list`: one container listing grouped by lease
// (slots, pause marker and done markers under their lease, see
// lease/names.go), printed as an aligned table or as JSON. Pure: the
// command makes the listing.

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leaderrun/leaderrun/lease"
)

// listedBlob is one blob of a container listing, as the listing returns it.
type listedBlob struct {
	Name     string
	State    lease.State       // the listing's lease state; "" reads as available
	Metadata map[string]string // any case
}

// listedLease is one lease of a listing.
type listedLease struct {
	Name      string
	Slots     []listedSlot // the slot blobs that exist, by slot; may lack slot 0
	SlotCount int          // N: slot 0's recorded slots key, or one more than the highest slot seen
	Pause     *lease.Pause // the pause marker; nil if none (it may have run out: Pause.Active)
	DoneHosts []string     // hosts with a done marker, sorted
}

type listedSlot struct {
	Slot  int
	URL   string
	Props *lease.Properties
}

// slot0 is the lease blob NAME; a lease known only from its markers or
// other slots reads as absent there.
func (l listedLease) slot0(blobURL func(string) string) listedSlot {
	if len(l.Slots) > 0 && l.Slots[0].Slot == 0 {
		return l.Slots[0]
	}
	return listedSlot{URL: blobURL(l.Name), Props: &lease.Properties{State: lease.StateAbsent, Metadata: map[string]string{}}}
}

// groupListing groups one listing's blobs by lease, sorted by lease name.
// Blobs named NAME~something that leaderrun does not write are left out.
// A pause or done marker lists its lease even when no slot blob exists.
// date is the listing's Date; blobURL gives a blob's URL without secrets.
func groupListing(blobs []listedBlob, date time.Time, blobURL func(string) string) []listedLease {
	byName := map[string]*listedLease{}
	get := func(name string) *listedLease {
		if l := byName[name]; l != nil {
			return l
		}
		l := &listedLease{Name: name}
		byName[name] = l
		return l
	}
	for _, b := range blobs {
		n := lease.ParseBlobName(b.Name)
		switch n.Kind {
		case lease.KindSlot:
			l := get(n.Lease)
			l.Slots = append(l.Slots, listedSlot{Slot: n.Slot, URL: blobURL(b.Name), Props: lease.PropertiesOf(b.State, b.Metadata, date)})
		case lease.KindPause:
			md := map[string]string{}
			for k, v := range b.Metadata {
				md[strings.ToLower(k)] = v
			}
			get(n.Lease).Pause = lease.ReadPause(md)
		case lease.KindDone:
			l := get(n.Lease)
			l.DoneHosts = append(l.DoneHosts, n.Host)
		}
	}
	out := make([]listedLease, 0, len(byName))
	for _, l := range byName {
		slices.SortFunc(l.Slots, func(a, b listedSlot) int { return cmp.Compare(a.Slot, b.Slot) })
		slices.Sort(l.DoneHosts)
		l.SlotCount = 1
		if len(l.Slots) > 0 {
			l.SlotCount = l.Slots[len(l.Slots)-1].Slot + 1
			if n, err := strconv.Atoi(l.Slots[0].Props.Metadata["slots"]); err == nil && l.Slots[0].Slot == 0 && n > l.SlotCount && n <= lease.MaxSlots {
				l.SlotCount = n
			}
		}
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b listedLease) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// pauseJSON is a pause in JSON: until is null when open-ended.
type pauseJSON struct {
	Reason *string    `json:"reason"`
	Since  *time.Time `json:"since"`
	Until  *time.Time `json:"until"`
}

// slotStatusJSON is one slot in a lease's `slots` array.
type slotStatusJSON struct {
	Slot int `json:"slot"`
	statusJSON
}

// leaseStatusJSON is one lease as `list -o json` prints it, and the shape
// `status -o json` grows into: the keys of statusJSON for slot 0 (the blob
// NAME), `pause` (null, or the pause in force at the service's Date), and,
// only when they apply, `slots` (every existing slot blob, when N > 1) and
// `doneHosts`. `lease` is its name (list only; status may leave it out).
type leaseStatusJSON struct {
	Lease string `json:"lease,omitempty"`
	statusJSON
	Pause     *pauseJSON       `json:"pause"`
	Slots     []slotStatusJSON `json:"slots,omitempty"`
	DoneHosts []string         `json:"doneHosts,omitempty"`
}

// toLeaseStatusJSON converts one lease; now is the service's Date.
func toLeaseStatusJSON(l listedLease, now time.Time, blobURL func(string) string) leaseStatusJSON {
	s0 := l.slot0(blobURL)
	j := leaseStatusJSON{Lease: l.Name, statusJSON: toStatusJSON(s0.URL, s0.Props), DoneHosts: l.DoneHosts}
	scheduleJSON(&j.statusJSON, s0.Props, now)
	if p := l.Pause; p.Active(now) {
		pj := &pauseJSON{}
		if p.Reason != "" {
			pj.Reason = &p.Reason
		}
		if !p.Since.IsZero() {
			pj.Since = &p.Since
		}
		if !p.Until.IsZero() {
			pj.Until = &p.Until
		}
		j.Pause = pj
	}
	if l.SlotCount > 1 {
		j.Slots = []slotStatusJSON{}
		for _, s := range l.Slots {
			j.Slots = append(j.Slots, slotStatusJSON{Slot: s.Slot, statusJSON: toStatusJSON(s.URL, s.Props)})
		}
	}
	return j
}

// listJSON is `list -o json`: an array, empty rather than null.
func listJSON(leases []listedLease, now time.Time, blobURL func(string) string) []leaseStatusJSON {
	out := make([]leaseStatusJSON, 0, len(leases))
	for _, l := range leases {
		out = append(out, toLeaseStatusJSON(l, now, blobURL))
	}
	return out
}

// listTextHolderMax is the widest holder the table shows; longer ones are
// cut ending in "...". JSON keeps them whole.
const listTextHolderMax = 40

// writeListText prints the aligned table: one row per lease, and for a
// lease of N > 1 slots a summary row and one indented row per slot. Ages are
// by now, the service's Date. NOTES shows an active pause (PAUSED) and how
// many hosts are done.
func writeListText(w io.Writer, leases []listedLease, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LEASE\tSTATE\tHOLDER\tTERM\tSINCE\tLAST RUN\tNOTES")
	for _, l := range leases {
		notes := leaseNotes(l, now)
		if l.SlotCount <= 1 {
			p := &lease.Properties{State: lease.StateAbsent}
			if len(l.Slots) > 0 {
				p = l.Slots[0].Props
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Name, slotCells(p, now), notes)
			continue
		}
		held := 0
		for _, s := range l.Slots {
			if heldState(s.Props.State) {
				held++
			}
		}
		fmt.Fprintf(tw, "%s\t%d/%d leased\t-\t-\t-\t-\t%s\n", l.Name, held, l.SlotCount, notes)
		for _, s := range l.Slots {
			fmt.Fprintf(tw, "  slot %d\t%s\n", s.Slot, slotCells(s.Props, now))
		}
	}
	return tw.Flush()
}

func heldState(s lease.State) bool { return s == lease.StateLeased || s == lease.StateBreaking }

// slotCells is STATE, HOLDER, TERM, SINCE and LAST RUN (the newest run
// that is over: a running one shows as the state, holder and since),
// tab-separated.
func slotCells(p *lease.Properties, now time.Time) string {
	if p.State == lease.StateAbsent {
		return "never held\t-\t-\t-\t-"
	}
	holder, term, since := "-", "-", "-"
	if p.Holder != "" {
		holder = cutText(p.Holder, listTextHolderMax)
	}
	if p.Term > 0 {
		term = strconv.FormatInt(p.Term, 10)
	}
	if !p.AcquiredAt.IsZero() {
		since = shortAgo(p.AcquiredAt, now)
	}
	last := "-"
	for _, r := range lease.ReadHistory(p.Metadata, heldState(p.State)) {
		if !r.Running {
			last = lastRunText(r, now)
			break
		}
	}
	return strings.Join([]string{string(p.State), holder, term, since, last}, "\t")
}

// lastRunText describes a run that is over: "exit 0, 5m ago on vm-3",
// "lost its lease, started 1h ago on vm-2".
func lastRunText(r lease.Run, now time.Time) string {
	on := "on " + cutText(cmp.Or(r.Holder, "an unknown host"), listTextHolderMax)
	switch {
	case r.Lost():
		return "lost its lease, started " + shortAgo(r.Start, now) + " " + on
	case r.ExitCode == nil:
		return "ended " + shortAgo(r.End, now) + " " + on
	case r.End.IsZero():
		return fmt.Sprintf("exit %d, started %s %s", *r.ExitCode, shortAgo(r.Start, now), on)
	}
	return fmt.Sprintf("exit %d, %s %s", *r.ExitCode, shortAgo(r.End, now), on)
}

func leaseNotes(l listedLease, now time.Time) string {
	var notes []string
	if p := l.Pause; p.Active(now) {
		n := "PAUSED"
		if !p.Until.IsZero() {
			n += " until " + p.Until.Format(time.RFC3339)
		}
		if p.Reason != "" {
			n += ": " + p.Reason
		}
		notes = append(notes, n)
	}
	if v, ok := viewSchedule(l.slot0(func(string) string { return "" }).Props, now); ok {
		n := "schedule " + v.spec
		if !v.next.IsZero() {
			n += ", next " + v.next.Format(time.RFC3339)
		}
		if !v.missed.IsZero() {
			n += ", MISSED " + v.missed.Format(time.RFC3339)
		}
		notes = append(notes, n)
	}
	switch len(l.DoneHosts) {
	case 0:
	case 1:
		notes = append(notes, "1 host done")
	default:
		notes = append(notes, strconv.Itoa(len(l.DoneHosts))+" hosts done")
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

func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
