// Package schedule decides which occurrence of a cron schedule is due, for
// leaderrun --schedule. The schedule is parsed by robfig/cron (the parser
// Kubernetes CronJob uses): five fields or a descriptor (@hourly, @daily,
// @weekly, @monthly, @yearly), with an optional CRON_TZ=Zone prefix; the
// default zone is UTC, not the host's, so that every VM of a fleet reads a
// schedule alike. The decision takes plain time values (the service's clock,
// the blob's creation, the occurrence last started) and does no I/O.
package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a parsed --schedule.
type Schedule struct {
	spec string
	s    cron.Schedule
}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse parses a schedule (see the package comment). @every is refused: it
// has no occurrences of its own, only intervals from when it was read.
func Parse(spec string) (*Schedule, error) {
	spec = strings.TrimSpace(spec)
	body, full := spec, "CRON_TZ=UTC "+spec
	if strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") {
		_, body, _ = strings.Cut(spec, " ")
		full = spec
	}
	if strings.HasPrefix(strings.TrimSpace(body), "@every") {
		return nil, fmt.Errorf("schedule %q: @every is not a schedule of occurrences; use five fields", spec)
	}
	s, err := parser.Parse(full)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", spec, err)
	}
	return &Schedule{spec: spec, s: s}, nil
}

// String is the schedule as given.
func (s *Schedule) String() string { return s.spec }

// Next is the first occurrence after t (zero if none within five years).
func (s *Schedule) Next(t time.Time) time.Time { return s.s.Next(t).UTC() }

// maxLookback bounds the search for the latest occurrence: a schedule
// whose latest occurrence is older (a 29 February that is years away) has
// none due.
const maxLookback = 5 * 366 * 24 * time.Hour

// Latest is the latest occurrence at or before now; zero if none within
// the last five years.
func (s *Schedule) Latest(now time.Time) time.Time {
	for w := time.Minute; w <= 2*maxLookback; w *= 2 {
		// cron's Next is strictly after its argument: start just before
		// the window so that an occurrence at its start counts.
		n := s.s.Next(now.Add(-w - time.Nanosecond))
		if n.IsZero() || n.After(now) {
			continue
		}
		for {
			m := s.s.Next(n)
			if m.IsZero() || m.After(now) {
				return n.UTC()
			}
			n = m
		}
	}
	return time.Time{}
}

// Verdict is what an invocation does about the latest occurrence.
type Verdict string

const (
	Run     Verdict = "run"     // due: run it now
	NotDue  Verdict = "not due" // no occurrence yet (none, or none since the lease blob was made)
	Started Verdict = "started" // the latest occurrence was already started, by anyone
	Missed  Verdict = "missed"  // the latest occurrence never started and is past the deadline
)

// Decision is a verdict on one occurrence.
type Decision struct {
	Verdict    Verdict
	Occurrence time.Time // the latest occurrence at or before now (zero with NotDue if none)
}

// Decide says what to do at now (the service's clock) about the latest
// occurrence: created is when the lease blob was made (zero: unknown),
// last the occurrence last started (zero: none), deadline the
// --starting-deadline (0: no limit). Only the latest occurrence is ever
// run: older missed ones are not.
func (s *Schedule) Decide(now, created, last time.Time, deadline time.Duration) Decision {
	occ := s.Latest(now)
	switch {
	case occ.IsZero():
		return Decision{Verdict: NotDue}
	case !created.IsZero() && !occ.After(created):
		// Due before the lease was first used, as a new CronJob does
		// not run what was due before it existed.
		return Decision{Verdict: NotDue, Occurrence: occ}
	case !last.IsZero() && !last.Before(occ):
		return Decision{Verdict: Started, Occurrence: occ}
	case deadline > 0 && now.Sub(occ) > deadline:
		return Decision{Verdict: Missed, Occurrence: occ}
	}
	return Decision{Verdict: Run, Occurrence: occ}
}
