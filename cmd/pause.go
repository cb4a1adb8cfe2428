package cmd

// `leaderrun pause`, `resume` and `break`, the operator's actions on a
// lease: the pause marker (lease/pausecheck.go), and the safe break of its
// holder, which pause --drain does too.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
)

type pauseOptions struct {
	loc    locationOptions
	dur    time.Duration
	reason string
	drain  bool
}

func newPauseCmd(a *app) *cobra.Command {
	o := &pauseOptions{}
	c := &cobra.Command{
		Use:   "pause -l NAME [--for DURATION] [--reason TEXT] [--drain]",
		Short: "Keep every contender from acquiring NAME until resume (or for a while)",
		Long: `pause writes the pause marker of NAME (the blob NAME~pause, metadata only):
while it is in force no contender acquires NAME. A contender with --no-wait
exits with the conflict code (-E) after a line that gives the reason; a
waiting one keeps waiting, and acquires once the pause is over. The pause lasts
until 'leaderrun resume', or, with --for, until DURATION has passed by the
storage service's clock (its Date: this host's clock is never used). Pausing a
paused lease replaces its pause.

The holder is not disturbed: COMMAND runs on until it exits. With --drain the
holder's lease is also broken the safe way, as 'leaderrun break' does: its
renewals fail, it stops COMMAND before the lease could pass on and exits 76,
and nobody takes over while the pause lasts.

A contender reads the marker right before each acquire it sends (one read,
never one per poll of a held lease), so one that had passed its check may
still start up to one round trip after the pause was written.`,
		Example: `  leaderrun pause -l cron/report --reason "db maintenance, ticket 4711"
  leaderrun pause -l cron/report --for 2h --reason "release freeze"
  leaderrun pause -l scheduler --drain --reason "moving to the new cluster"
  leaderrun resume -l cron/report`,
		Args: unexpectedArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.loc.complete(c.Flags()); err != nil {
				return err
			}
			if o.dur < 0 || (c.Flags().Changed("for") && o.dur == 0) {
				return exit.Usagef("invalid --for %s: want more than 0 (leave it out to pause until resume)", o.dur)
			}
			if _, err := (lease.Pause{Reason: o.reason}).Metadata(); err != nil {
				return exit.With(exit.Usage, err) // before any request
			}
			return runPause(c.Context(), a, o)
		},
	}
	o.loc.addFlags(c.Flags())
	fs := c.Flags()
	fs.DurationVar(&o.dur, "for", 0, "end the pause after this long, by the storage service's clock (default: until resume)")
	fs.StringVar(&o.reason, "reason", "", "why: shown by status, list and every contender held off (printable ASCII, at most 256 characters)")
	fs.BoolVar(&o.drain, "drain", false, "also break the holder's lease safely: it stops its command and exits 76")
	return c
}

// runPause reads the marker first and writes it after: the read's Date
// dates the pause (the service's clock: since, and until = since + --for),
// and tells whether an older pause is being replaced.
func runPause(ctx context.Context, a *app, o *pauseOptions) error {
	rctx, cancel := context.WithTimeout(ctx, operatorTimeout)
	defer cancel()
	client, err := o.loc.client(a.log)
	if err != nil {
		return err
	}
	old, date, err := client.ReadPause(rctx)
	if err != nil {
		return exit.With(exit.Unavailable, fmt.Errorf("cannot read the pause of lease %s: %w", exit.Quote(o.loc.lease), err))
	}
	if date.IsZero() {
		return exit.With(exit.Unavailable, errors.New("the storage service sent no Date header: a pause is never dated by this host's clock"))
	}
	p := lease.Pause{Reason: o.reason, Since: date, Drain: o.drain}
	if o.dur > 0 {
		p.Until = date.Add(o.dur)
	}
	if _, err := client.WritePause(rctx, p); err != nil {
		var ce *lease.ConfigError
		if errors.As(err, &ce) {
			return exit.With(exit.Usage, err)
		}
		return exit.With(exit.Unavailable, fmt.Errorf("cannot pause lease %s: %w", exit.Quote(o.loc.lease), err))
	}
	if old.Active(date) {
		a.log.Info("replaced the pause in force", "lease", exit.Cut(o.loc.lease), "previous_reason", exit.Cut(old.Reason),
			"previous_since", timeOr(old.Since, "none"), "previous_until", timeOr(old.Until, "none"))
	}
	a.log.Info("lease paused: no contender acquires it", "lease", exit.Cut(o.loc.lease), "reason", exit.Cut(o.reason),
		"since", timeOr(p.Since, "none"), "until", timeOr(p.Until, "resume"))
	if !o.drain {
		return nil
	}
	// The drain is `leaderrun break` without --now: every held slot, each
	// broken safely (no period: free when the holder's period ends).
	return runBreak(ctx, a, &breakOptions{loc: o.loc, slot: -1})
}

// timeOr is t in RFC 3339, UTC, or zero when t is the zero time.
func timeOr(t time.Time, zero string) string {
	if t.IsZero() {
		return zero
	}
	return rfc3339(t)
}

func newResumeCmd(a *app) *cobra.Command {
	o := &locationOptions{}
	c := &cobra.Command{
		Use:   "resume -l NAME",
		Short: "End the pause of NAME",
		Long: `resume deletes the pause marker of NAME: contenders acquire it again at their
next poll. Resuming a lease that is not paused does nothing and exits 0.`,
		Example: `  leaderrun resume -l cron/report`,
		Args:    unexpectedArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.complete(c.Flags()); err != nil {
				return err
			}
			rctx, cancel := context.WithTimeout(c.Context(), operatorTimeout)
			defer cancel()
			client, err := o.client(a.log)
			if err != nil {
				return err
			}
			existed, err := client.DeletePause(rctx)
			if err != nil {
				return exit.With(exit.Unavailable, fmt.Errorf("cannot resume lease %s: %w", exit.Quote(o.lease), err))
			}
			if !existed {
				a.log.Info("lease is not paused; nothing to resume", "lease", exit.Cut(o.lease))
				return nil
			}
			a.log.Info("lease resumed: contenders may acquire it again", "lease", exit.Cut(o.lease))
			return nil
		},
	}
	o.addFlags(c.Flags())
	return c
}

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
	client, v, err := o.loc.view(rctx, a.log) // one listing
	if err != nil {
		return err
	}
	if o.slot >= v.SlotCount {
		return exit.Usagef("invalid --slot %d: lease %s has %s (slot 0 to %d)", o.slot, exit.Quote(o.loc.lease), plural(v.SlotCount, "slot"), v.SlotCount-1)
	}
	if o.slot >= 0 {
		return o.breakSlot(rctx, a, client, o.slot, v.Slot(o.slot).Props)
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
		a.log.Info("no slot is held; nothing to break", "lease", exit.Cut(o.loc.lease), "slots", v.SlotCount)
	}
	return nil
}

// plural is "1 slot", "2 slots".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// breakSlot breaks slot i of the lease; p is its read, from the listing.
func (o *breakOptions) breakSlot(ctx context.Context, a *app, client *lease.Blob, i int, p *lease.Properties) error {
	c, err := client.Container().Blob(lease.SlotBlob(o.loc.lease, i))
	if err != nil {
		return leader.StorageExit(err)
	}
	return breakHolder(ctx, a, c, p, fmt.Sprintf("%s slot %d", o.loc.lease, i), o.now)
}

// breakHolder breaks the lease that p (a read of client's blob) shows
// held: with period 0 if now, else with none, so that the service frees it
// when the holder's period ends, after the holder has stopped its command.
// name is how the log names the lease.
func breakHolder(rctx context.Context, a *app, client *lease.Blob, p *lease.Properties, name string, now bool) error {
	if !p.State.Held() {
		a.log.Info("lease is not held; nothing to break", "lease", exit.Cut(name), "state", p.State)
		return nil
	}
	period := lease.BreakAtPeriodEnd
	if now {
		period = 0
		a.log.Warn("breaking with period 0: the old holder's command may still run next to the next holder's for up to one lease duration",
			"lease", exit.Cut(name), "holder", exit.Cut(p.Holder))
	}
	freeIn, err := client.BreakLease(rctx, period)
	if errors.Is(err, lease.ErrNotLeased) {
		a.log.Info("lease is not held; nothing to break", "lease", exit.Cut(name))
		return nil
	} else if err != nil {
		return exit.With(exit.Unavailable, fmt.Errorf("cannot break lease %s: %w", exit.Quote(name), err))
	}
	if !now && freeIn > 0 {
		a.log.Info("lease breaking; the holder stops its command before anyone can acquire", "lease", exit.Cut(name),
			"holder", exit.Cut(p.Holder), "term", p.Term, "free_in", freeIn)
	} else {
		a.log.Info("lease broken", "lease", exit.Cut(name), "holder", exit.Cut(p.Holder), "term", p.Term)
	}
	return nil
}
