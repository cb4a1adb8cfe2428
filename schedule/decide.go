package schedule

// decide.go: what an invocation does about the latest occurrence.

import "time"

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
	Occurrence time.Time // the latest occurrence at or before now (zero with NotDue if none); DecideRetry's: the one it decides on
	// DecideRetry's: the attempt to run (Run, Retry), or the attempt last
	// started; and with RetryLater and Lost, when the retry is due.
	Attempt int
	RetryAt time.Time
}

// Decide says what to do at now (the service's clock) about the latest
// occurrence: created is when the lease blob was made (zero: unknown),
// last the occurrence last started (zero: none), deadline the
// --starting-deadline (0: no limit). Only the latest occurrence is ever
// run: older missed ones are not. Occurrences compare as instants (the
// package comment): one last started at or after the latest is started.
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
