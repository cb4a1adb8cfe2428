package cmd

// status and break of a lease with slots: one listing of the prefix NAME
// gives every slot blob and the done markers (lease/names.go), grouped as
// `leaderrun list` groups them (list_model.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/lease"
)

// leaseView is one lease as status and break see it.
type leaseView struct {
	client *lease.Client // the blob NAME (slot 0)
	l      listedLease
	date   time.Time // the service's Date of the listing, or of the fallback read
}

// view lists the lease's blobs in one request. Storage that lets leaderrun
// read the blob NAME but not list the container (a SAS for that blob only)
// gets the one read of before: slot 0 alone, no done hosts. Storage that
// cannot be read is exit 69.
func (o *locationOptions) view(ctx context.Context, log hclog.Logger) (*leaseView, error) {
	client, err := o.client(log)
	if err != nil {
		return nil, err
	}
	listed, date, lerr := client.List(ctx, o.lease)
	var se *lease.StorageError
	if lerr != nil && (!errors.As(lerr, &se) || (se.StatusCode != http.StatusForbidden && se.StatusCode != http.StatusUnauthorized)) {
		return nil, exitWith(exitUnavailable, fmt.Errorf("cannot read lease %q: %w", o.lease, lerr))
	}
	if lerr != nil {
		// Credentials that may read the blob but not list (a SAS for the
		// lease blob alone): slot 0 only, without pause or done hosts.
		log.Info("may not list the lease's blobs; reading the lease blob alone", "error", lerr)
		p, err := client.Properties(ctx)
		if err != nil {
			return nil, exitWith(exitUnavailable, fmt.Errorf("cannot read lease %q: %w", o.lease, err))
		}
		l := listedLease{Name: o.lease, SlotCount: 1}
		if p.Exists {
			l.Slots = []listedSlot{{Slot: 0, URL: client.URL(), Props: p}}
		}
		return &leaseView{client: client, l: l, date: p.Date}, nil
	}
	// This lease's done markers live apart (--once-per-host): one more
	// listing, of this lease's alone.
	done, _, err := client.List(ctx, lease.DonePrefix(o.lease))
	if err != nil {
		return nil, exitWith(exitUnavailable, fmt.Errorf("cannot read lease %q: %w", o.lease, err))
	}
	listed = append(listed, done...)
	v := &leaseView{client: client, l: listedLease{Name: o.lease, SlotCount: 1}, date: date}
	for _, g := range groupListing(toListedBlobs(listed), date, v.blobURL) {
		if g.Name == o.lease { // the prefix may hold other leases
			v.l = g
		}
	}
	return v, nil
}

// blobURL is a blob's URL, without any secret.
func (v *leaseView) blobURL(blob string) string { return v.client.BlobURL(blob) }

// writeSlotsText adds to status's text one line per slot when the lease
// has more than one, and the hosts that are done.
func writeSlotsText(w io.Writer, l listedLease, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	defer tw.Flush()
	if l.SlotCount > 1 {
		held := 0
		for _, s := range l.Slots {
			if heldState(s.Props.State) {
				held++
			}
		}
		fmt.Fprintf(tw, "slots:\t%d of %d leased\n", held, l.SlotCount)
		at := 0
		for i := 0; i < l.SlotCount; i++ {
			cells := "never held\t-\t-\t-\t-"
			if at < len(l.Slots) && l.Slots[at].Slot == i {
				cells = slotCells(l.Slots[at].Props, now)
				at++
			}
			fmt.Fprintf(tw, "  slot %d:\t%s\n", i, cells)
		}
	}
	if len(l.DoneHosts) > 0 {
		fmt.Fprintf(tw, "done hosts:\t%d: %s\n", len(l.DoneHosts), joinHosts(l.DoneHosts))
	}
}

func joinHosts(hosts []string) string {
	const most = 20
	s := ""
	for i, h := range hosts {
		if i == most {
			return s + fmt.Sprintf(", … (%d more; -o json lists all)", len(hosts)-most)
		}
		if i > 0 {
			s += ", "
		}
		s += h
	}
	return s
}

// breakSlots is break for a lease of several slots without --slot: every
// held slot, each as break breaks one lease.
func breakSlots(ctx context.Context, a *app, o *breakOptions, v *leaseView) error {
	any := false
	for _, s := range v.l.Slots {
		if !heldState(s.Props.State) {
			continue
		}
		c, err := v.client.Sibling(lease.SlotBlob(o.loc.lease, s.Slot))
		if err != nil {
			return storageExit(err)
		}
		any = true
		if err := breakHolder(ctx, a, c, s.Props, fmt.Sprintf("%s slot %d", o.loc.lease, s.Slot), o.now); err != nil {
			return err
		}
	}
	if !any {
		a.log.Info("no slot is held; nothing to break", "lease", o.loc.lease, "slots", v.l.SlotCount)
	}
	return nil
}

// breakSlot is break --slot I: that slot's blob alone, one read and the
// break.
func breakSlot(ctx context.Context, a *app, o *breakOptions) error {
	client, err := o.loc.client(a.log)
	if err != nil {
		return err
	}
	c, err := client.Sibling(lease.SlotBlob(o.loc.lease, o.slot))
	if err != nil {
		return storageExit(err)
	}
	p, err := c.Properties(ctx)
	if err != nil {
		return exitWith(exitUnavailable, fmt.Errorf("cannot read slot %d of lease %q: %w", o.slot, o.loc.lease, err))
	}
	return breakHolder(ctx, a, c, p, fmt.Sprintf("%s slot %d", o.loc.lease, o.slot), o.now)
}
