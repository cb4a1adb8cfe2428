package lease

// View: one lease as one listing shows it (its slot blobs, pause marker,
// done markers, and the runs they record). list, status, history, check,
// break and the slot poll read a lease through it; the commands render it.

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// View is one lease as a listing (or, failing that, one read) shows it.
type View struct {
	Name      string
	URL       string    // the blob NAME's URL (slot 0), without any secret
	Slots     []Slot    // the slot blobs that exist, by slot; slot 0 may be missing
	SlotCount int       // N: slot 0's recorded count, or one more than the highest slot seen (1 if none)
	Pause     *Pause    // the pause marker; nil if none (it may have run out: see Paused)
	DoneHosts []string  // hosts with a done marker, sorted
	Date      time.Time // the service's Date of the listing or read
}

// Slot is one slot blob of a lease.
type Slot struct {
	Index int
	URL   string
	Props *Properties
}

// Slot returns slot i; a slot whose blob does not exist reads as absent.
func (v *View) Slot(i int) Slot {
	for _, s := range v.Slots {
		if s.Index == i {
			return s
		}
	}
	s := Slot{Index: i, Props: &Properties{State: StateAbsent, Metadata: map[string]string{}, Date: v.Date}}
	if i == 0 {
		s.URL = v.URL
	}
	return s
}

// Held is how many slots are held (leased or breaking).
func (v *View) Held() int {
	n := 0
	for _, s := range v.Slots {
		if s.Props.State.Held() {
			n++
		}
	}
	return n
}

// Paused is the pause in force at the view's Date; nil if none.
func (v *View) Paused() *Pause {
	if v.Pause.Active(v.Date) {
		return v.Pause
	}
	return nil
}

// Runs are the runs the slots record, newest start first.
func (v *View) Runs() []Run {
	var hs [][]Run
	for _, s := range v.Slots {
		hs = append(hs, ReadHistory(s.Props.Metadata, s.Props.State.Held()))
	}
	return MergeRuns(hs...)
}

// LastSuccess is the newest success the slots record; nil if none.
func (v *View) LastSuccess() *Run {
	var best *Run
	for _, s := range v.Slots {
		if r := LastSuccess(s.Props.Metadata); r != nil && (best == nil || r.End.After(best.End)) {
			best = r
		}
	}
	return best
}

// Group groups a listing's blobs by lease, sorted by name, without NAME~x
// that leaderrun does not write; a pause or done marker lists its lease even
// with no slot blob. date: the listing's; url: a blob's URL, no secrets
// (nil: none).
func Group(listed []Listed, date time.Time, url func(blob string) string) []View {
	if url == nil {
		url = func(string) string { return "" }
	}
	byName := map[string]*View{}
	get := func(name string) *View {
		if byName[name] == nil {
			byName[name] = emptyView(name, date, url)
		}
		return byName[name]
	}
	for _, b := range listed {
		n := ParseBlobName(b.Name)
		switch n.Kind {
		case KindSlot:
			v := get(n.Lease)
			v.Slots = append(v.Slots, Slot{Index: n.Slot, URL: url(b.Name), Props: b.Props})
		case KindPause:
			get(n.Lease).Pause = pauseOf(b.Props.Metadata)
		case KindDone:
			v := get(n.Lease)
			v.DoneHosts = append(v.DoneHosts, n.Host)
		}
	}
	out := make([]View, 0, len(byName))
	for _, v := range byName {
		slices.SortFunc(v.Slots, func(a, b Slot) int { return cmp.Compare(a.Index, b.Index) })
		slices.Sort(v.DoneHosts)
		if len(v.Slots) > 0 {
			v.SlotCount = v.Slots[len(v.Slots)-1].Index + 1
			if n := recordedSlots(v.Slots[0].Props.Metadata); v.Slots[0].Index == 0 && n > v.SlotCount {
				v.SlotCount = n
			}
		}
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b View) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// emptyView is lease name's view with nothing listed: one slot, absent.
func emptyView(name string, date time.Time, url func(string) string) *View {
	v := &View{Name: name, SlotCount: 1, Date: date}
	if url != nil {
		v.URL = url(name)
	}
	return v
}

// viewOf is lease name's view in a listing of its prefix (other leases too).
func viewOf(name string, listed []Listed, date time.Time, url func(string) string) *View {
	for _, v := range Group(listed, date, url) {
		if v.Name == name {
			return &v
		}
	}
	return emptyView(name, date, url)
}

// Views lists every lease of the container (ListLeases) as a View.
func (c *Container) Views(ctx context.Context) ([]View, error) {
	listed, date, err := c.ListLeases(ctx)
	if err != nil {
		return nil, err
	}
	return Group(listed, date, c.BlobURL), nil
}

// View reads this lease: one listing of the prefix NAME (slots, pause
// marker) and one of its done markers. Credentials that may read the blob
// NAME but not list (a SAS for that blob alone) get one read of slot 0,
// without pause or done hosts.
func (b *Blob) View(ctx context.Context) (*View, error) {
	listed, date, err := b.c.List(ctx, b.name)
	if denied(err) {
		b.c.log.Info("may not list the lease's blobs; reading the lease blob alone", "error", err)
		p, err := b.Properties(ctx)
		if err != nil {
			return nil, err
		}
		v := &View{Name: b.name, URL: b.url, SlotCount: 1, Date: p.Date}
		if p.Exists {
			v.Slots = []Slot{{Index: 0, URL: b.url, Props: p}}
		}
		return v, nil
	}
	if err != nil {
		return nil, err
	}
	done, _, err := b.c.List(ctx, DonePrefix(b.name))
	if err != nil {
		return nil, err
	}
	return viewOf(b.name, append(listed, done...), date, b.c.BlobURL), nil
}
