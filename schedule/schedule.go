package schedule

// schedule.go: Parse, and the occurrences of a schedule: Next, Latest,
// Previous and Between. The zone's wall times and instants: wall.go; the
// verdict on the due occurrence: decide.go.

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a parsed --schedule.
type Schedule struct {
	spec string
	// wall is the parsed schedule moved to UTC, a zone without offset
	// changes: its Next steps through wall times, each exactly once, read
	// as UTC (wall.go).
	wall  *cron.SpecSchedule
	loc   *time.Location // the schedule's zone
	fixed bool           // a fixed-time schedule (the package comment)
}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// NeverDueError is Parse's error for a schedule that can never fire: its
// day of the month is in none of its months ("0 0 30 2 *", "0 0 31 4 *").
type NeverDueError struct{ Spec string }

func (e *NeverDueError) Error() string {
	return fmt.Sprintf("schedule %q can never fire: none of its months has its day of the month", e.Spec)
}

// neverDueFrom is where Parse looks for an occurrence: a leap year, so that
// 29 February is found within the parser's five years.
var neverDueFrom = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Parse parses a schedule (see the package comment). @every is refused: it
// has no occurrences of its own, only intervals from when it was read. A
// schedule that can never fire is refused too (*NeverDueError).
func Parse(spec string) (*Schedule, error) {
	spec = strings.TrimSpace(spec)
	body, full := spec, "CRON_TZ=UTC "+spec
	if strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") {
		_, body, _ = strings.Cut(spec, " ")
		body, full = strings.TrimSpace(body), spec
	}
	if strings.HasPrefix(body, "@every") {
		return nil, fmt.Errorf("schedule %q: @every is not a schedule of occurrences; use five fields", spec)
	}
	parsed, err := parser.Parse(full)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", spec, err)
	}
	spc, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("schedule %q: not a schedule of fields", spec)
	}
	wall := *spc
	wall.Location = time.UTC
	s := &Schedule{spec: spec, wall: &wall, loc: spc.Location, fixed: fixedTime(body)}
	if s.wall.Next(neverDueFrom).IsZero() {
		return nil, &NeverDueError{Spec: spec}
	}
	return s, nil
}

// fixedTime reports whether body (the schedule without its zone) is
// fixed-time in Vixie cron's sense: neither its minute nor its hour field
// begins with a wildcard. Of the descriptors, only @hourly is a wildcard
// schedule ("0 * * * *").
func fixedTime(body string) bool {
	if strings.HasPrefix(body, "@") {
		return body != "@hourly"
	}
	f := strings.Fields(body)
	wild := func(field string) bool { return strings.HasPrefix(field, "*") || strings.HasPrefix(field, "?") }
	return len(f) >= 2 && !wild(f[0]) && !wild(f[1])
}

// String is the schedule as given.
func (s *Schedule) String() string { return s.spec }

// Next is the first occurrence after t, in UTC (zero if none within five
// years).
func (s *Schedule) Next(t time.Time) time.Time {
	if s.fixed {
		return s.nextFixed(t)
	}
	return s.nextWild(t)
}

// maxLookback bounds the search for the latest occurrence: a schedule
// whose latest occurrence is older (a 29 February that is years away) has
// none due.
const maxLookback = 5 * 366 * 24 * time.Hour

// Latest is the latest occurrence at or before now; zero if none within
// the last five years.
func (s *Schedule) Latest(now time.Time) time.Time {
	for w := time.Minute; w <= 2*maxLookback; w *= 2 {
		// Next is strictly after its argument: start just before the
		// window so that an occurrence at its start counts.
		n := s.Next(now.Add(-w - time.Nanosecond))
		if n.IsZero() || n.After(now) {
			continue
		}
		for {
			m := s.Next(n)
			if m.IsZero() || m.After(now) {
				return n
			}
			n = m
		}
	}
	return time.Time{}
}

// Previous is the occurrence before occ: the latest strictly before it
// (zero if none within five years). For COMMAND's
// LEADERRUN_PREVIOUS_OCCURRENCE.
func (s *Schedule) Previous(occ time.Time) time.Time {
	return s.Latest(occ.Add(-time.Nanosecond))
}

// MaxBetween caps Between's count: Between returns MaxBetween when at least
// that many occurrences fell between its instants.
const MaxBetween = 1000

// Between is how many occurrences fell strictly between a and b (0 if b is
// not after a), counted up to MaxBetween: a week of a minutely schedule
// counts as MaxBetween, not 10080. For COMMAND's LEADERRUN_MISSED, between
// the occurrence last started and the one starting.
func (s *Schedule) Between(a, b time.Time) int {
	n := 0
	for t := s.Next(a); n < MaxBetween && !t.IsZero() && t.Before(b); t = s.Next(t) {
		n++
	}
	return n
}
