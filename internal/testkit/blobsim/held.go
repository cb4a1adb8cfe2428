package blobsim

// held.go: who held each blob's lease when. A hold (Tenure) begins with an
// acquire, a renewal after expiry or a change of ID, and ends at the
// expiry, at the end of a break, or at the release, change or deletion
// that ended it first. The simulator asks HeldThroughout whether a
// holder's child ran only while the service counted the lease as its own.

import (
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Tenure is one hold of a blob's lease by one lease ID, the half-open
// interval [From, Until): held at From, no longer at Until.
type Tenure struct {
	LeaseID string    // canonical: a lowercase GUID
	From    time.Time // when the request that began it was applied
	// Until is when the hold ends unless something else happens first: the
	// expiry (moved on by each renewal), the end of a break, or when a
	// release, change or deletion ended it. Zero: an infinite lease, no end
	// planned. It may be after now.
	Until time.Time
}

// history is a blob's tenures, oldest first; they never overlap. It
// outlives the blob: a blob deleted and made again goes on with the same.
type history struct{ tenures []Tenure }

// open begins a hold and returns its index.
func (h *history) open(id string, from, until time.Time) int {
	h.tenures = append(h.tenures, Tenure{LeaseID: id, From: from, Until: until})
	return len(h.tenures) - 1
}

func (h *history) end(i int) time.Time { return h.tenures[i].Until }

func (h *history) setEnd(i int, until time.Time) { h.tenures[i].Until = until }

// covers reports whether t held throughout [from, to].
func (t Tenure) covers(from, to time.Time) bool {
	return !from.Before(t.From) && (t.Until.IsZero() || to.Before(t.Until))
}

// HeldThroughout reports whether leaseID held the blob's lease at the
// service during the whole of [from, to] (from must not be after to): one
// hold began no later than from and ends after to. A hold ends at an
// instant: at its expiry, another may acquire. A renewal after expiry
// begins a new hold, so the time between was not held; a deleted blob's
// holds end at its deletion. A hold's planned end (expiry, break) is known
// in advance, so ask about times up to now.
func (s *Service) HeldThroughout(container, blob, leaseID string, from, to time.Time) bool {
	if to.Before(from) {
		return false
	}
	id := canonicalID(leaseID)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.histories[blobKey{container, blob}]
	if h == nil {
		return false
	}
	for _, t := range h.tenures {
		if t.LeaseID == id && t.covers(from, to) {
			return true
		}
	}
	return false
}

// Tenures lists every hold of the blob's lease so far, oldest first (the
// blob may since have been deleted); nil if it was never leased.
func (s *Service) Tenures(container, blob string) []Tenure {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.histories[blobKey{container, blob}]; h != nil {
		return slices.Clone(h.tenures)
	}
	return nil
}

// canonicalID is a lease ID as the service compares them: GUIDs by value
// (the service accepts any GUID format), anything else lowercased.
func canonicalID(id string) string {
	if u, err := uuid.Parse(id); err == nil {
		return u.String()
	}
	return strings.ToLower(id)
}
