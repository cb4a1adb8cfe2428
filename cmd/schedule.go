package cmd

// --schedule, --starting-deadline, --retries and --retry-delay: run the
// occurrence of a cron schedule that is due, on one VM of the fleet, and
// again if it failed (the schedule package decides which; the lease records
// it with the claim).

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/schedule"
)

func (o *runOptions) addScheduleFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.scheduleSpec, "schedule", "", "run the occurrence of this cron schedule that is due, once in the fleet: five fields or @daily…, optional CRON_TZ=Zone prefix, UTC by default (env LEADERRUN_SCHEDULE)")
	fs.DurationVar(&o.run.StartingDeadline, "starting-deadline", 0, "with --schedule: an occurrence older than this that never started is not run; a WARNING says so (0 = no limit)")
	fs.IntVar(&o.run.Retries, "retries", 0, "with --schedule: run an occurrence whose attempt failed (non-zero exit, 76, 124, or its holder gone) again, up to `N` more times (0 to 10), on the fleet's next invocation after --retry-delay and within --starting-deadline")
	fs.DurationVar(&o.run.RetryDelay, "retry-delay", time.Minute, "with --retries: the least time from a failed attempt's end (or its holder's lease running out) to its retry")
}

// maxRetries is the most --retries.
const maxRetries = 10

// completeSchedule parses the schedule; with it, --once-per, --once and
// --once-per-host are refused (they say when to run too), and so are
// several slots.
func (o *runOptions) completeSchedule(fs *pflag.FlagSet) error {
	if d := o.run.StartingDeadline; d < 0 {
		return exit.Usagef("invalid --starting-deadline %s: must not be negative", d)
	}
	if n := o.run.Retries; n < 0 || n > maxRetries {
		return exit.Usagef("invalid --retries %d: use 0 to %d", n, maxRetries)
	}
	if d := o.run.RetryDelay; d < 0 {
		return exit.Usagef("invalid --retry-delay %s: must not be negative", d)
	}
	if o.scheduleSpec == "" {
		if fs.Changed("schedule") {
			return exit.Usagef("invalid --schedule '': give a cron schedule, or leave the flag out")
		}
		for _, name := range []string{"starting-deadline", "retries", "retry-delay"} {
			if fs.Changed(name) {
				return exit.Usagef("--%s needs --schedule", name)
			}
		}
		return nil
	}
	if fs.Changed("retry-delay") && o.run.Retries == 0 {
		return exit.Usagef("--retry-delay needs --retries")
	}
	for _, name := range []string{"once-per", "once", "once-per-host"} {
		if fs.Changed(name) {
			return exit.Usagef("--schedule and --%s cannot be used together: the schedule says when to run", name)
		}
	}
	if n := o.run.Lease.Slots; n > 1 {
		// Each slot is its own blob with its own record: an occurrence
		// would run once per slot.
		return exit.Usagef("--schedule and --slots %d cannot be used together: an occurrence runs once, on one holder", n)
	}
	s, err := schedule.Parse(o.scheduleSpec)
	if err != nil {
		return exit.Usagef("invalid --schedule: %v", err)
	}
	o.run.Schedule = s
	// Each invocation tries once, and reads first: most find nothing due.
	o.run.NoWait = true
	return nil
}

// scheduleView is what status, list and check show of a scheduled lease:
// the schedule recorded with the last claim, the occurrence last started
// and the next one after now (the service's Date).
type scheduleView struct {
	spec       string
	last, next time.Time
	// missed is the earliest occurrence after last that did not start
	// although a later one is due too: it was never run (zero if none).
	missed time.Time
	// due is the latest occurrence at or before now when nobody has
	// started it yet: the next invocation runs it (zero if none).
	due time.Time
	// notStarted counts the occurrences after last, up to now, that did
	// not start (missed and due included), up to schedule.MaxBetween.
	notStarted int
}

// viewSchedule reads p's schedule keys; ok is false on a lease never run
// with --schedule. A schedule that does not parse shows as recorded.
func viewSchedule(p *lease.Properties, now time.Time) (v scheduleView, ok bool) {
	if p == nil || p.Schedule == "" {
		return v, false
	}
	v.spec, v.last = p.Schedule, p.Occurrence
	s, err := schedule.Parse(p.Schedule)
	if err != nil || now.IsZero() {
		return v, true
	}
	v.next = s.Next(now)
	if d := s.Decide(now, p.Created, v.last, 0); d.Verdict == schedule.Run {
		v.due = d.Occurrence
	}
	if !v.last.IsZero() {
		v.notStarted = s.Between(v.last, now.Add(time.Nanosecond))
		if n1 := s.Next(v.last); !n1.IsZero() && !n1.After(now) {
			if n2 := s.Next(n1); !n2.IsZero() && !n2.After(now) {
				v.missed = n1
			}
		}
	}
	return v, true
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// scheduleRows adds status's rows for a scheduled lease.
func scheduleRows(row func(k, v string), p *lease.Properties, now time.Time) {
	v, ok := viewSchedule(p, now)
	if !ok {
		return
	}
	row("schedule", v.spec)
	last := "none started"
	if !v.last.IsZero() {
		last = stamp(v.last, now)
		if p.Attempt > 1 {
			last += fmt.Sprintf(", attempt %d", p.Attempt) // --retries
		}
	}
	if !v.missed.IsZero() {
		last += fmt.Sprintf("; MISSED %s", rfc3339(v.missed))
	}
	row("last occurrence", last)
	if !v.due.IsZero() {
		row("due occurrence", rfc3339(v.due)+" (not started yet: the next invocation runs it, unless past its --starting-deadline)")
	}
	if !v.next.IsZero() {
		row("next occurrence", rfc3339(v.next))
	}
}

// scheduleJSON fills status -o json's schedule keys; a lease never run with
// --schedule has none (they are left out, not null: they do not apply).
func scheduleJSON(s *statusJSON, p *lease.Properties, now time.Time) {
	v, ok := viewSchedule(p, now)
	if !ok {
		return
	}
	s.Schedule = &v.spec
	s.LastOccurrence = timeOrNull(v.last)
	s.NextOccurrence = timeOrNull(v.next)
	s.MissedOccurrence = timeOrNull(v.missed)
	s.DueOccurrence = timeOrNull(v.due)
}
