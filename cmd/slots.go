package cmd

// Slots and rolling work on the run command: --slots N (up to N holders at
// once, lease/slots.go), --once (one successful run for the whole fleet) and
// --once-per-host (one successful run per host), and the done marker a run
// that succeeded writes before its release.

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/lease"
)

// slotOptions are the root command's slot and run-once flags.
type slotOptions struct {
	n           int
	once        bool
	oncePerHost bool
	host        string // --once-per-host: --identity when given, else the hostname (set by complete)
}

func (o *slotOptions) addFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.n, "slots", 1, "up to N holders run COMMAND at once, each on its own slot (1 to 50; LEADERRUN_SLOT tells COMMAND which); every host must give the same N")
	fs.BoolVar(&o.once, "once", false, "skip (exit 0) if any host already completed a run with status 0 under this lease; a failed run lets the next one try (not with --slots > 1: it runs COMMAND once for the fleet)")
	fs.BoolVar(&o.oncePerHost, "once-per-host", false, "skip (exit 0) if this host (--identity, else the hostname) already completed a run with status 0 under this lease; a failed run does not count")
}

// complete checks the flags; host is --identity as given (empty: none).
func (o *slotOptions) complete() error {
	if o.n < 1 || o.n > lease.MaxSlots {
		return usagef("invalid --slots %d: use 1 to %d", o.n, lease.MaxSlots)
	}
	if o.oncePerHost && o.host == "" {
		o.host = hostname()
	}
	return nil
}

// oncePerHostName is WaitOptions.OncePerHost: the host, or "" when off.
func (o *slotOptions) oncePerHostName() string {
	if !o.oncePerHost {
		return ""
	}
	return o.host
}

// logSkip logs a --once or --once-per-host skip.
func logSkip(log hclog.Logger, skip *lease.SkipError) {
	switch skip.Reason {
	case lease.SkipOnce:
		args := []any{"succeeded_on", skip.Holder}
		if !skip.Start.IsZero() {
			args = append(args, "succeeded_at", skip.Start.UTC().Format(time.RFC3339))
		}
		log.Info("skipped: a run already completed with status 0 (--once)", args...)
	case lease.SkipOncePerHost:
		log.Info("skipped: this host already completed a run with status 0 (--once-per-host)", "host", skip.Holder)
	}
}

// markDone writes this host's done marker after COMMAND exited with status
// 0 (code), by itself or when asked to step down for a scheduled event,
// while the lease is still held: the release comes after it, so nobody can
// take the slot before the marker exists.
func (h *heldRun) markDone(ctx context.Context, out outcome, code int) {
	if !h.o.slots.oncePerHost || (out.kind != outcomeExited && out.kind != outcomeSteppedDown) || code != exitOK {
		return
	}
	if err := h.l.MarkDone(ctx, h.o.slots.host); err != nil {
		h.log.Warn("could not record that this host is done; it will run again", "host", h.o.slots.host, "error", err)
	}
}
