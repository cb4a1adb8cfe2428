package cmd

// status and break of a lease with slots: the lease's View (every slot
// blob, the pause and the done markers) read for status, history, check and
// break, and what status and break add for slots.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
)

// view reads the lease (lease.View: one listing of its slots and markers).
// Storage that cannot be read is exit 69.
func (o *locationOptions) view(ctx context.Context, log hclog.Logger) (*lease.Blob, *lease.View, error) {
	client, err := o.client(log)
	if err != nil {
		return nil, nil, err
	}
	v, err := client.View(ctx)
	if err != nil {
		return nil, nil, exit.With(exit.Unavailable, fmt.Errorf("cannot read lease %q: %w", o.lease, err))
	}
	return client, v, nil
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

// breakSlots is break for a lease of several slots without --slot: every
// held slot, each as break breaks one lease.
func breakSlots(ctx context.Context, a *app, o *breakOptions, client *lease.Blob, v *lease.View) error {
	any := false
	for _, s := range v.Slots {
		if !s.Props.State.Held() {
			continue
		}
		c, err := client.Container().Blob(lease.SlotBlob(o.loc.lease, s.Index))
		if err != nil {
			return leader.StorageExit(err)
		}
		any = true
		if err := breakHolder(ctx, a, c, s.Props, fmt.Sprintf("%s slot %d", o.loc.lease, s.Index), o.now); err != nil {
			return err
		}
	}
	if !any {
		a.log.Info("no slot is held; nothing to break", "lease", o.loc.lease, "slots", v.SlotCount)
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
	c, err := client.Container().Blob(lease.SlotBlob(o.loc.lease, o.slot))
	if err != nil {
		return leader.StorageExit(err)
	}
	p, err := c.Properties(ctx)
	if err != nil {
		return exit.With(exit.Unavailable, fmt.Errorf("cannot read slot %d of lease %q: %w", o.slot, o.loc.lease, err))
	}
	return breakHolder(ctx, a, c, p, fmt.Sprintf("%s slot %d", o.loc.lease, o.slot), o.now)
}
