// schedule.go: WaitOptions.Schedule on the lease's side. The occurrence due
// is decided on the service's clock at every poll read and in the claim,
// which records it in its one metadata write (with the term, the start and
// the nonce): an occurrence starts at most once in the fleet, even if its
// run fails, its holder dies, or the claim's answer is lost.

package lease

import "time"

// Schedule decides, for WaitOptions.Schedule, which occurrence is due.
type Schedule interface {
	// String is the schedule as given: recorded with each claim.
	String() string
	// Due is asked with now, the service's clock; created, when the
	// blob was made (zero: unknown); last, the occurrence last started
	// (zero: none). It returns the occurrence to run, or a *SkipError
	// (Reason SkipNotDue, SkipStarted or SkipMissed) not to run. It must
	// be cheap and do no I/O.
	Due(now, created, last time.Time) (occurrence time.Time, skip *SkipError)
}

// due asks the schedule about p, read at now. Without a schedule or a
// service time it lets the attempt go on (the claim decides).
func (a *attempt) due(p *Properties, now time.Time) (time.Time, error) {
	if a.w.Schedule == nil || now.IsZero() {
		return time.Time{}, nil
	}
	occ, skip := a.w.Schedule.Due(now, p.Created, p.Occurrence)
	if skip != nil {
		return occ, skip
	}
	return occ, nil
}
