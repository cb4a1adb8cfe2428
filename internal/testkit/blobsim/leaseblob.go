package blobsim

// leaseblob.go: the Lease Blob request: its headers checked first, as the
// service does whatever the blob's state, then the action (lease.go has
// the rules).

import (
	"net/http"
	"strconv"
	"time"
)

// leaseBlob is Lease Blob, each action.
func (s *Service) leaseBlob(c *call, now time.Time) (*answer, *failure) {
	lc, f := c.leaseCall()
	if f != nil {
		return nil, f
	}
	b, f := s.existing(c, now, true)
	if f != nil {
		return nil, f
	}
	status, leaseTime := http.StatusOK, -1
	switch c.op {
	case OpAcquire:
		if lc.proposed == "" {
			lc.proposed = s.newLeaseID()
		}
		f, status = b.acquire(now, lc.proposed, lc.seconds), http.StatusCreated
	case OpRenew:
		f = b.renew(now, lc.id)
	case OpChange:
		f = b.change(now, lc.id, lc.proposed)
	case OpRelease:
		f = b.release(now, lc.id)
	case OpBreak:
		leaseTime, f = b.breakLease(now, lc.period)
		status = http.StatusAccepted
	}
	if f != nil {
		return nil, f
	}
	a := s.ok(c, now, status)
	a.add("Etag", b.etag)
	a.add("Last-Modified", httpTime(b.modified))
	switch c.op {
	case OpAcquire, OpRenew, OpChange:
		a.add("X-Ms-Lease-Id", b.lease.id)
	case OpBreak:
		a.add("X-Ms-Lease-Time", strconv.Itoa(leaseTime))
	}
	return a, nil
}

// newLeaseID is the ID the service chooses for an acquire that proposed
// none: a GUID, from a counter.
func (s *Service) newLeaseID() string {
	s.leaseIDs++
	var b [36]byte
	copy(b[:], "5e1ec7ed-0000-4000-8000-")
	hexDigits(b[24:], s.leaseIDs, lowerHex)
	return string(b[:])
}

// leaseCall is a Lease Blob request's headers, checked.
type leaseCall struct {
	id, proposed string // canonical
	seconds      int    // acquire: -1 or 15–60
	period       int    // break: 0–60, -1 none
}

// leaseCall checks the headers each action needs, before anything else
// (the service refuses a malformed request whatever the blob's state).
func (c *call) leaseCall() (leaseCall, *failure) {
	lc := leaseCall{period: -1}
	var f *failure
	if lc.id, f = leaseIDHeader("x-ms-lease-id", c.leaseID); f != nil {
		return lc, f
	}
	if lc.proposed, f = leaseIDHeader("x-ms-proposed-lease-id", c.proposedID); f != nil {
		return lc, f
	}
	switch c.op {
	case OpLease:
		if c.leaseAction == "" {
			return lc, missingHeader("x-ms-lease-action")
		}
		return lc, badHeader("x-ms-lease-action", c.leaseAction)
	case OpAcquire:
		if !c.hasDuration {
			return lc, missingHeader("x-ms-lease-duration")
		}
		n, err := strconv.Atoi(c.duration)
		if err != nil || n != -1 && (n < minLeaseSeconds || n > maxLeaseSeconds) {
			return lc, badHeader("x-ms-lease-duration", c.duration)
		}
		lc.seconds = n
	case OpRenew, OpRelease:
		if lc.id == "" {
			return lc, missingHeader("x-ms-lease-id")
		}
	case OpChange:
		if lc.id == "" {
			return lc, missingHeader("x-ms-lease-id")
		}
		if lc.proposed == "" {
			return lc, missingHeader("x-ms-proposed-lease-id")
		}
	case OpBreak:
		if c.hasBreakPeriod {
			n, err := strconv.Atoi(c.breakPeriod)
			if err != nil || n < 0 || n > maxBreakSeconds {
				return lc, badHeader("x-ms-lease-break-period", c.breakPeriod)
			}
			lc.period = n
		}
	}
	return lc, nil
}
