package schedule

// retry.go: --retries, the decision beside Decide: whether the occurrence
// last started runs again, and when.

import "time"

// Verdicts of DecideRetry, beside Decide's.
const (
	Retry      Verdict = "retry"       // the occurrence last started failed: run it again now (Decision.Attempt)
	RetryLater Verdict = "retry later" // it failed, and its retry is due at Decision.RetryAt: not yet
	// Lost: the attempt last started was found without an end record, its
	// lease free (its holder died or lost the lease), and when is not
	// known: the finder records the time it found it, and the retry is due
	// the delay after that (Decision.RetryAt).
	Lost   Verdict = "lost"
	GaveUp Verdict = "gave up" // it failed, and no retry is left, or none would start within the deadline
)

// Outcome is how the attempt last started went, as the lease records it.
type Outcome int

const (
	// Going: it runs, or how it went is not known (a record without its
	// run): no retry.
	Going     Outcome = iota
	Succeeded         // it exited with status 0
	Failed            // it exited with another status (leaderrun's 76 and 124 included)
	// Vanished: no end is recorded and nobody holds the lease: its holder
	// died, or lost the lease, before it could record the end.
	Vanished
)

// Attempt is what the lease records of the occurrence last started.
type Attempt struct {
	Occurrence time.Time // zero: none started
	Number     int       // its attempt last started, 1 …; 0 reads as 1
	Outcome    Outcome
	// EndedAt is when the attempt ended (Failed), or when it was found
	// vanished (Vanished; zero: not recorded yet). A retry is due Delay
	// after it.
	EndedAt time.Time
}

// Retries is --retries and --retry-delay: how many more times a failed
// occurrence runs, and how long after the failed attempt's end at the
// earliest.
type Retries struct {
	Max   int
	Delay time.Duration
}

// DecideRetry is Decide with retries: at now (the service's clock), an
// occurrence due that nobody started runs (attempt 1), as Decide says; the
// occurrence last started, if it is still the latest, runs again when its
// last attempt failed or vanished, at most r.Max more times, no earlier
// than r.Delay after that attempt's end, and only within the deadline
// (0: no limit) counted from the occurrence. A success, or a newer
// occurrence due, ends the retries. The decision's Attempt is the attempt
// to run (Run: 1; Retry: the next), or the attempt last started.
func (s *Schedule) DecideRetry(now, created time.Time, last Attempt, deadline time.Duration, r Retries) Decision {
	d := s.Decide(now, created, last.Occurrence, deadline)
	if d.Verdict == Run {
		d.Attempt = 1
		return d
	}
	n := max(last.Number, 1)
	if d.Verdict != Started || r.Max <= 0 || (last.Outcome != Failed && last.Outcome != Vanished) {
		d.Attempt = n
		return d
	}
	occ := last.Occurrence
	// pastDeadline: a retry starting at t would start outside the deadline.
	pastDeadline := func(t time.Time) bool { return deadline > 0 && t.Sub(occ) > deadline }
	gaveUp := Decision{Verdict: GaveUp, Occurrence: occ, Attempt: n}
	if n > r.Max {
		return gaveUp
	}
	if last.Outcome == Vanished && last.EndedAt.IsZero() {
		if r.Delay <= 0 {
			if pastDeadline(now) {
				return gaveUp
			}
			return Decision{Verdict: Retry, Occurrence: occ, Attempt: n + 1}
		}
		at := now.Add(r.Delay)
		if pastDeadline(at) {
			return gaveUp
		}
		return Decision{Verdict: Lost, Occurrence: occ, Attempt: n, RetryAt: at}
	}
	at := last.EndedAt.Add(r.Delay)
	if pastDeadline(at) || pastDeadline(now) {
		return gaveUp
	}
	if now.Before(at) {
		return Decision{Verdict: RetryLater, Occurrence: occ, Attempt: n, RetryAt: at}
	}
	return Decision{Verdict: Retry, Occurrence: occ, Attempt: n + 1}
}
