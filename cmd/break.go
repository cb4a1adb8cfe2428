package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
)

type breakOptions struct {
	loc  locationOptions
	now  bool
	slot int // --slot; -1: not given
}

func newBreakCmd(a *app) *cobra.Command {
	o := &breakOptions{}
	c := &cobra.Command{
		Use:   "break -l NAME [--now]",
		Short: "Break a stuck lease (operator action)",
		Long: `break ends the current lease on NAME. By default it sends no break period:
the storage service frees the lease when the holder's current lease period
ends (at most one lease duration, 60s), the very bound the holder's stop
deadline is built on. So the holder's next renewal fails and it stops its
command before any other host can acquire the lease, whatever its metadata
records. The log says when the lease will be free, as the service answered.

--now breaks with period 0: the lease is free at once, and the old holder's
command may still run for up to one lease duration next to the new holder's.
Use it only when the old holder is known to be gone.

Breaking a lease that is not held does nothing and exits 0.

A lease used with --slots N > 1 has one lease per slot: --slot I breaks slot
I alone; without --slot, break breaks every slot that is held (each with the
same safe break), since an operator who breaks NAME means all of its
holders.`,
		Example: `  leaderrun break -l cron/report
  leaderrun break -l cron/report --now   # the old holder is known to be dead
  leaderrun break -l patch/2026-11 --slot 1`,
		Args: unexpectedArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.loc.complete(c.Flags()); err != nil {
				return err
			}
			return runBreak(c.Context(), a, o)
		},
	}
	o.loc.addFlags(c.Flags())
	c.Flags().BoolVar(&o.now, "now", false, "break with period 0: free at once, the old holder may still be running")
	c.Flags().IntVar(&o.slot, "slot", -1, "break this slot only (0 to N-1) of a lease used with --slots N; default: every held slot")
	return c
}

func runBreak(ctx context.Context, a *app, o *breakOptions) error {
	rctx, cancel := context.WithTimeout(ctx, operatorTimeout)
	defer cancel()
	if o.slot < -1 || o.slot >= lease.MaxSlots {
		return exit.Usagef("invalid --slot %d: use 0 to %d", o.slot, lease.MaxSlots-1)
	}
	if o.slot >= 0 {
		client, err := o.loc.client(a.log)
		if err != nil {
			return err
		}
		return o.breakSlot(rctx, a, client, o.slot, nil)
	}
	client, v, err := o.loc.view(rctx, a.log) // one listing
	if err != nil {
		return err
	}
	if v.SlotCount <= 1 {
		return breakHolder(rctx, a, client, v.Slot(0).Props, o.loc.lease, o.now)
	}
	// Several slots without --slot: every held slot, each as break breaks
	// one lease.
	held := false
	for _, s := range v.Slots {
		if !s.Props.State.Held() {
			continue
		}
		held = true
		if err := o.breakSlot(rctx, a, client, s.Index, s.Props); err != nil {
			return err
		}
	}
	if !held {
		a.log.Info("no slot is held; nothing to break", "lease", o.loc.lease, "slots", v.SlotCount)
	}
	return nil
}

// breakSlot breaks slot i of the lease; p is its read, nil for --slot I,
// which reads that slot's blob alone.
func (o *breakOptions) breakSlot(ctx context.Context, a *app, client *lease.Blob, i int, p *lease.Properties) error {
	c, err := client.Container().Blob(lease.SlotBlob(o.loc.lease, i))
	if err != nil {
		return leader.StorageExit(err)
	}
	if p == nil {
		if p, err = c.Properties(ctx); err != nil {
			return exit.With(exit.Unavailable, fmt.Errorf("cannot read slot %d of lease %q: %w", i, o.loc.lease, err))
		}
	}
	return breakHolder(ctx, a, c, p, fmt.Sprintf("%s slot %d", o.loc.lease, i), o.now)
}

// breakHolder breaks the lease that p (a read of client's blob) shows
// held: with period 0 if now, else with none, so that the service frees it
// when the holder's period ends, after the holder has stopped its command.
// name is how the log names the lease.
func breakHolder(rctx context.Context, a *app, client *lease.Blob, p *lease.Properties, name string, now bool) error {
	if !p.State.Held() {
		a.log.Info("lease is not held; nothing to break", "lease", name, "state", p.State)
		return nil
	}
	period := lease.BreakAtPeriodEnd
	if now {
		period = 0
		a.log.Warn("breaking with period 0: the old holder's command may still run next to the next holder's for up to one lease duration",
			"lease", name, "holder", p.Holder)
	}
	freeIn, err := client.BreakLease(rctx, period)
	if errors.Is(err, lease.ErrNotLeased) {
		a.log.Info("lease is not held; nothing to break", "lease", name)
		return nil
	} else if err != nil {
		return exit.With(exit.Unavailable, fmt.Errorf("cannot break lease %q: %w", name, err))
	}
	if !now && freeIn > 0 {
		a.log.Info("lease breaking; the holder stops its command before anyone can acquire", "lease", name,
			"holder", p.Holder, "term", p.Term, "free_in", freeIn)
	} else {
		a.log.Info("lease broken", "lease", name, "holder", p.Holder, "term", p.Term)
	}
	return nil
}
