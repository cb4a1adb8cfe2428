package blobsim

// lease.go: a blob's lease and the service's rules for it: its five
// states, what acquire, renew, change, release and break do in each, and
// what a write needs while a lease is there. Every change of who holds the
// lease goes into the blob's history (held.go).
//
// The rules are the Lease Blob table of Azure's documentation, as measured
// on the service and on Azurite; where the two differ the comment says
// which one the model follows.

import (
	"math"
	"net/http"
	"time"
)

// LeaseState is a blob lease's state, as x-ms-lease-state names it.
type LeaseState string

const (
	Available LeaseState = "available" // no lease: anyone may acquire
	Leased    LeaseState = "leased"    // held by one lease ID until it expires (fixed) or for ever (infinite)
	Expired   LeaseState = "expired"   // a fixed lease ran out; its ID may renew it until the blob is written or leased again
	Breaking  LeaseState = "breaking"  // broken, still held until the break time
	Broken    LeaseState = "broken"    // broken and free; its ID may still release it
)

// Status is x-ms-lease-status for the state: "locked" while held.
func (s LeaseState) Status() string {
	if s == Leased || s == Breaking {
		return "locked"
	}
	return "unlocked"
}

// Lease durations the service accepts: fixed 15–60 s, or infinite (-1).
const (
	minLeaseSeconds = 15
	maxLeaseSeconds = 60
	maxBreakSeconds = 60
)

// lease is a blob's lease. state is the state as last set: a Leased lease
// past its expiry and a Breaking one past its break time are Expired and
// Broken once settle has seen the time.
type lease struct {
	state   LeaseState
	id      string    // canonical (lowercase GUID); "" when Available
	seconds int       // Leased and Expired: the duration, -1 infinite
	expiry  time.Time // Leased with a fixed duration; zero when infinite
	breakAt time.Time // Breaking
	tenure  int       // Leased, Breaking: this hold's index in the blob's history
}

func availableLease() lease { return lease{state: Available, tenure: -1} }

// settle brings the lease to now: expiry and the end of a break need no
// request to happen.
func (l *lease) settle(now time.Time) {
	switch {
	case l.state == Leased && !l.expiry.IsZero() && !now.Before(l.expiry):
		l.state = Expired
	case l.state == Breaking && !now.Before(l.breakAt):
		l.state = Broken
	}
}

// held reports whether the lease is held now (after settle).
func (l *lease) held() bool { return l.state == Leased || l.state == Breaking }

// expiryOf is when a lease of seconds taken at now expires; zero for an
// infinite one.
func expiryOf(now time.Time, seconds int) time.Time {
	if seconds < 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(seconds) * time.Second)
}

var (
	errLeaseAlreadyPresent  = &failure{status: http.StatusConflict, code: "LeaseAlreadyPresent"}
	errLeaseBreakingAcquire = &failure{status: http.StatusConflict, code: "LeaseIsBreakingAndCannotBeAcquired"}
	errLeaseBreakingChange  = &failure{status: http.StatusConflict, code: "LeaseIsBreakingAndCannotBeChanged"}
	errLeaseBrokenRenew     = &failure{status: http.StatusConflict, code: "LeaseIsBrokenAndCannotBeRenewed"}
	errLeaseIDMismatchLease = &failure{status: http.StatusConflict, code: "LeaseIdMismatchWithLeaseOperation"}
	errLeaseNotPresentLease = &failure{status: http.StatusConflict, code: "LeaseNotPresentWithLeaseOperation"}
	errLeaseIDMissing       = &failure{status: http.StatusPreconditionFailed, code: "LeaseIdMissing"}
	errLeaseIDMismatchBlob  = &failure{status: http.StatusPreconditionFailed, code: "LeaseIdMismatchWithBlobOperation"}
	errLeaseNotPresentBlob  = &failure{status: http.StatusPreconditionFailed, code: "LeaseNotPresentWithBlobOperation"}
)

// acquire takes the lease for id (canonical) for seconds (-1: infinite).
// The holder may acquire again, with a new duration.
func (b *blobState) acquire(now time.Time, id string, seconds int) *failure {
	l := &b.lease
	l.settle(now)
	switch l.state {
	case Leased:
		if id != l.id {
			return errLeaseAlreadyPresent
		}
		l.seconds, l.expiry = seconds, expiryOf(now, seconds)
		b.hist.setEnd(l.tenure, l.expiry)
		return nil
	case Breaking:
		if id == l.id {
			return errLeaseBreakingAcquire
		}
		return errLeaseAlreadyPresent
	}
	*l = lease{state: Leased, id: id, seconds: seconds, expiry: expiryOf(now, seconds)}
	l.tenure = b.hist.open(id, now, l.expiry)
	return nil
}

// renew restarts the holder's duration. After expiry the same ID renews
// as long as nobody wrote or leased the blob since (a write makes the
// lease available, see written): that renewal is a new hold, the time
// between was not held.
func (b *blobState) renew(now time.Time, id string) *failure {
	l := &b.lease
	l.settle(now)
	switch l.state {
	case Leased:
		if id != l.id {
			return errLeaseIDMismatchLease
		}
		if l.seconds > 0 {
			l.expiry = expiryOf(now, l.seconds)
			b.hist.setEnd(l.tenure, l.expiry)
		}
		return nil
	case Expired:
		if id != l.id {
			return errLeaseIDMismatchLease
		}
		l.state, l.expiry = Leased, expiryOf(now, l.seconds)
		l.tenure = b.hist.open(id, now, l.expiry)
		return nil
	case Breaking, Broken:
		if id == l.id {
			return errLeaseBrokenRenew
		}
	}
	return errLeaseIDMismatchLease
}

// change gives the lease a new ID, expiry unchanged. Asking for the ID it
// already has succeeds (the retry of a change whose answer was lost).
func (b *blobState) change(now time.Time, id, proposed string) *failure {
	l := &b.lease
	l.settle(now)
	switch l.state {
	case Leased:
		if id != l.id && proposed != l.id {
			return errLeaseIDMismatchLease
		}
		if proposed != l.id {
			until := b.hist.end(l.tenure)
			b.hist.setEnd(l.tenure, now)
			l.id = proposed
			l.tenure = b.hist.open(proposed, now, until)
		}
		return nil
	case Breaking:
		if id == l.id {
			return errLeaseBreakingChange
		}
		return errLeaseIDMismatchLease
	}
	return errLeaseNotPresentLease
}

// release frees the lease at once, whatever its state, for its own ID; a
// breaking lease too.
func (b *blobState) release(now time.Time, id string) *failure {
	l := &b.lease
	l.settle(now)
	if l.state == Available || id != l.id {
		return errLeaseIDMismatchLease
	}
	if l.held() {
		b.hist.setEnd(l.tenure, now)
	}
	*l = availableLease()
	return nil
}

// breakLease breaks the lease, whoever holds it. period is the break
// period in seconds, -1 for none. Without one, a fixed lease stays held
// until its expiry and an infinite one breaks at once; with one, the
// shorter of the period and what is left. A breaking lease can only break
// sooner. It returns x-ms-lease-time: the seconds until the lease is free,
// rounded as Azurite rounds (the service's rounding is not documented).
//
// An expired lease becomes broken, as Azurite does and as Azure's lease
// guide lists break among the actions allowed on an expired lease.
func (b *blobState) breakLease(now time.Time, period int) (int, *failure) {
	l := &b.lease
	l.settle(now)
	at := now
	switch l.state {
	case Available:
		return 0, errLeaseNotPresentLease
	case Leased:
		switch {
		case period == 0, period < 0 && l.seconds < 0:
		case period < 0:
			at = l.expiry
		case l.seconds < 0:
			at = now.Add(time.Duration(period) * time.Second)
		default:
			at = earlier(l.expiry, now.Add(time.Duration(period)*time.Second))
		}
		l.seconds, l.expiry = 0, time.Time{}
	case Breaking:
		switch {
		case period < 0:
			at = l.breakAt
		case period > 0:
			at = earlier(l.breakAt, now.Add(time.Duration(period)*time.Second))
		}
	case Expired:
		l.state, l.seconds, l.expiry = Broken, 0, time.Time{}
		return 0, nil
	case Broken:
		return 0, nil
	}
	b.hist.setEnd(l.tenure, earlier(b.hist.end(l.tenure), at))
	if at.After(now) {
		l.state, l.breakAt = Breaking, at
		return int(math.Round(at.Sub(now).Seconds())), nil
	}
	l.state, l.breakAt = Broken, time.Time{}
	return 0, nil
}

// writable checks a write's lease ID (canonical; "" if none sent): while
// the lease is held the write needs its ID; while it is not, sending one
// is refused.
func (b *blobState) writable(now time.Time, id string) *failure {
	l := &b.lease
	l.settle(now)
	switch {
	case l.held() && id == "":
		return errLeaseIDMissing
	case l.held() && id != l.id:
		return errLeaseIDMismatchBlob
	case !l.held() && id != "":
		return errLeaseNotPresentBlob
	}
	return nil
}

// readable checks a read's lease ID, if it sent one.
func (b *blobState) readable(now time.Time, id string) *failure {
	if id == "" {
		return nil
	}
	return b.writable(now, id)
}

// written is a successful write's effect on the lease: an expired or
// broken lease is gone, so its ID can no longer renew or release it.
func (b *blobState) written() {
	if l := &b.lease; l.state == Expired || l.state == Broken {
		*l = availableLease()
	}
}

// ended is the blob's deletion's effect on the lease: a hold ends now.
func (b *blobState) ended(now time.Time) {
	l := &b.lease
	l.settle(now)
	if l.held() {
		b.hist.setEnd(l.tenure, earlier(b.hist.end(l.tenure), now))
	}
	*l = availableLease()
}

// earlier is the earlier of two ends, zero meaning none (infinite).
func earlier(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero(), a.Before(b):
		return a
	}
	return b
}
