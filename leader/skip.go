package leader

// Runs that skip (--once-per, --once, --once-per-host, --schedule): the
// schedule as the lease asks it, the one line a skip logs, and the done
// marker a run that succeeded writes before its release.

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/schedule"
)

// leaseSchedule is the schedule as the lease asks it (lease.Schedule).
type leaseSchedule struct {
	s        *schedule.Schedule
	deadline time.Duration
}

func (l leaseSchedule) String() string { return l.s.String() }

func (l leaseSchedule) Due(now, created, last time.Time) (time.Time, *lease.SkipError) {
	d := l.s.Decide(now, created, last, l.deadline)
	reason := lease.SkipNotDue
	switch d.Verdict {
	case schedule.Run:
		return d.Occurrence, nil
	case schedule.Started:
		reason = lease.SkipStarted
	case schedule.Missed:
		reason = lease.SkipMissed
	}
	return d.Occurrence, &lease.SkipError{Reason: reason, Occurrence: d.Occurrence}
}

// leaseSchedule is WaitOptions.Schedule: nil without --schedule.
func (o *Options) leaseSchedule() lease.Schedule {
	if o.Schedule == nil {
		return nil
	}
	return leaseSchedule{s: o.Schedule, deadline: o.StartingDeadline}
}

// logSkip says why an invocation ran nothing: a missed occurrence is the
// one WARNING; a scheduled invocation that finds nothing due says so at
// debug level; the other skips at info.
func logSkip(log hclog.Logger, o *Options, skip *lease.SkipError) {
	switch skip.Reason {
	case lease.SkipMissed:
		log.Warn("missed: a scheduled occurrence never started and is past --starting-deadline; it will not run",
			"occurrence", rfc3339(skip.Occurrence), "schedule", o.Schedule.String(), "starting_deadline", o.StartingDeadline)
	case lease.SkipStarted:
		log.Debug("skipped: the occurrence due was already started", "occurrence", rfc3339(skip.Occurrence))
	case lease.SkipNotDue:
		log.Debug("skipped: no occurrence of the schedule is due", "latest", rfc3339(skip.Occurrence))
	case lease.SkipOnce:
		args := []any{"succeeded_on", skip.Holder}
		if !skip.Start.IsZero() {
			args = append(args, "succeeded_at", rfc3339(skip.Start))
		}
		log.Info("skipped: a run already completed with status 0 (--once)", args...)
	case lease.SkipOncePerHost:
		log.Info("skipped: this host already completed a run with status 0 (--once-per-host)", "host", skip.Holder)
	case lease.SkipOncePer:
		log.Info("skipped: a run started within the --once-per window", "window", o.OncePer,
			"last_run_by", skip.Holder, "last_run_start", rfc3339(skip.Start))
	}
}

// rfc3339 is t in UTC as RFC 3339; "" for the zero time.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// markDone writes this host's done marker after COMMAND exited with status
// 0 (code), by itself or when asked to step down for a scheduled event,
// while the lease is still held: the release comes after it, so nobody can
// take the slot before the marker exists.
func (h *heldRun) markDone(ctx context.Context, out outcome, code int) {
	if h.o.OncePerHost == "" || (out.kind != outcomeExited && out.kind != outcomeSteppedDown) || code != exit.OK {
		return
	}
	if err := h.l.MarkDone(ctx, h.o.OncePerHost); err != nil {
		h.log.Warn("could not record that this host is done; it will run again", "host", h.o.OncePerHost, "error", err)
	}
}
