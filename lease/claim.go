package lease

// claim.go: the claim of the new term in the blob's metadata after an
// acquire, and the read sent with (or before) the acquire that it reuses.
// The claim records the occurrence due (WaitOptions.Schedule) and its
// attempt, or the trigger it runs (trigger.go), in its one metadata write,
// with the term, the start and the nonce: an occurrence starts at most once
// in the fleet per attempt, and a trigger runs once, even if its run fails,
// its holder dies, or the claim's answer is lost.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// claim checks a just-acquired lease's metadata (once-per, …) and writes
// holder and the new term, stored term + 1, keeping every other key, with
// requests that end before the stop deadline: a lease is never handed over
// with a term that was not written.
//
// The metadata comes from reused, if not nil: a read made before or with the
// acquire, with the ETag of the acquire's answer. Every metadata write
// changes the ETag, so reused saw the metadata as of our acquire, whether
// read before or after it, and whether or not the service changes the ETag
// on acquire (if it does, only a read after the acquire can match, a poll
// read never: the claim reads again, slower but right). The write carries
// If-Match: that ETag with the lease ID, so it lands only on the version
// read; a 412 ConditionNotMet (or no reusable read) falls back to a read
// after the acquire, and the write goes If-Match that read's ETag: the
// only writer while we hold the lease, but a write applied late must not
// land on what another holder wrote after our lease lapsed and before the
// same Acquire took it again with our lease ID. Either way the term
// written is the stored term as of our acquire, plus one. The
// claim's service time (lastrunstart, the once-per decision) is the later of
// the read's Date and the acquire's: a reused poll read may be older than
// the acquire, and must not date the run.
//
// A claim once sent is seen through whatever ctx does: a stop request that
// cancels ctx while a claim is in flight (or its lost answer is read back)
// must not leave a run recorded that nobody starts. Its requests are bounded
// by the claim's own deadline, not by ctx; with ctx ended no new claim is
// sent, and one of ours that landed is adopted for the caller to take back
// (Lease.ReleaseUnused), so that no window or occurrence is spent for
// nothing.
func (a *attempt) claim(ctx context.Context, l *Lease, reused *Properties) error {
	rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), minTime(time.Now().Add(requestTimeout), l.stopAt()))
	defer cancel()
	p := reused
	for ; ; p = nil { // every retry reads the blob again
		if p == nil {
			var err error
			if p, err = a.b.getProperties(rctx); err != nil {
				return err
			}
			if !p.Exists {
				return &StorageError{Op: "get properties", StatusCode: 404, Code: codeBlobNotFound, kind: kindTransient}
			}
		}
		// Every write goes If-Match the version read, a read after the
		// acquire too: a write that the service applied late cannot land
		// on what another holder wrote since.
		ifMatch := p.etag
		if a.ownClaim(p) {
			// Our claim landed, though its answer was lost: it stands.
			a.e.log.Debug("found our own claim: its answer was lost", "term", p.Term)
			a.adopt(l, p)
			a.claimSent = false // landed: the Lease takes it from here
			return nil
		}
		// None of ours stands (a write refused, or one whose answer was
		// lost read back without our nonce: it cannot land later, it needs
		// the lease we hold). Asked to stop, send no other.
		a.claimOverwritten(p)
		if err := ctx.Err(); err != nil {
			return err
		}
		p = a.takeBackHeld(p)
		t, err := a.newTerm(l, p)
		if err != nil {
			return err
		}
		if t.foundLost != nil {
			// Nothing runs: the attempt last started is recorded as found
			// lost now, under our lease, for its retry's delay to count
			// from; a write that fails is made by the next contender.
			_, err := a.writeClaim(ctx, rctx, l.ID, ifMatch, t.md)
			if se := asStorageError(err); se != nil && ifMatch != "" && se.StatusCode == http.StatusPreconditionFailed && se.Code == codeConditionNotMet {
				continue
			}
			if err != nil {
				a.e.log.Debug("could not record the failed attempt as found", "error", err)
			}
			return t.foundLost
		}
		a.claimSent, a.claimBase, a.claimTerm, a.claimMD = true, lowered(p.Metadata), t.term, t.md
		ans, err := a.writeClaim(ctx, rctx, l.ID, ifMatch, t.md)
		switch se := asStorageError(err); {
		case se != nil && ifMatch != "" && se.StatusCode == http.StatusPreconditionFailed && se.Code == codeConditionNotMet:
			a.e.log.Debug("the blob changed since it was read: reading it again")
			continue
		case se != nil && se.Transient() && rctx.Err() == nil:
			// The write may have landed with its answer lost: only a read
			// tells. It shows our nonce if it did; if not, the write is
			// sent again on the version read.
			a.e.log.Debug("the claim's answer was lost: reading it back", "error", se)
			if waitFor(rctx.Done(), a.e.dice.backoff(1)) {
				return err
			}
			continue
		case err != nil:
			return err
		}
		l.Term, l.AcquiredAt, l.Occurrence, l.meta = t.term, t.acquiredAt, t.occurrence, t.md
		l.Cause, l.LastSuccess = t.cause, t.lastSuccess
		l.runStartRecorded = !t.now.IsZero()
		l.preRun = a.claimBase
		a.claimSent = false // landed: the Lease takes it from here
		l.sawDate(t.now)
		l.sawDate(ans.Date)
		return nil
	}
}

// writeClaim sends the claim's write within rctx, the claim's deadline. If
// ctx ends meanwhile (a stop request), the write keeps half of the time
// left and no more: an answer lost in a hang must leave time for the read
// that tells whether it landed, since no later attempt will.
func (a *attempt) writeClaim(ctx, rctx context.Context, leaseID, ifMatch string, md map[string]string) (answer, error) {
	wctx, cancel := context.WithCancel(rctx)
	defer cancel()
	var (
		mu  sync.Mutex
		cut *time.Timer
	)
	stop := context.AfterFunc(ctx, func() {
		d, _ := rctx.Deadline()
		mu.Lock()
		cut = time.AfterFunc(time.Until(d)/2, cancel)
		mu.Unlock()
	})
	defer func() {
		stop()
		mu.Lock()
		if cut != nil {
			cut.Stop()
		}
		mu.Unlock()
	}()
	return a.b.api.setMetadata(wctx, leaseID, ifMatch, md)
}

// Schedule decides, for WaitOptions.Schedule, which occurrence is due.
type Schedule interface {
	// String is the schedule as given: recorded with each claim.
	String() string
	// Due is asked with p, a read of the lease blob: p.Date is the
	// service's clock, p.State whether the lease is held (the claim asks
	// as if free: it holds the lease), and p records the blob's creation,
	// the occurrence last started, its attempt and how that went
	// (Properties.LastAttempt). It returns the run that is due, or a
	// *SkipError (SkipNotDue, SkipStarted, SkipMissed, SkipRetryLater,
	// SkipRetriesDone) not to run. It must be cheap and do no I/O.
	Due(p *Properties) (Due, *SkipError)
}

// Due is what a Schedule says is due.
type Due struct {
	Occurrence time.Time // the occurrence to run
	Attempt    int       // its attempt: 1, or more for a retry (--retries)
	Missed     int       // occurrences due since the previous one started that never started; -1: unknown
	// FoundLost: the attempt last started vanished (its holder gone with
	// no end recorded, the lease free) and nobody recorded when it was
	// found so: nothing runs now; the claim records the time, and the
	// retry is due at RetryAt.
	FoundLost bool
	RetryAt   time.Time
}

// trigger is why the run runs: a scheduled occurrence, or a retry of one.
func (d Due) trigger() string {
	if d.Attempt > 1 {
		return TriggerRetry
	}
	return TriggerSchedule
}

// due asks the schedule about p, read at p.Date. Without a schedule or a
// service time it lets the attempt go on (the claim decides).
func (a *attempt) due(p *Properties) (Due, error) {
	if a.w.Schedule == nil || p.Date.IsZero() {
		return Due{}, nil
	}
	d, skip := a.w.Schedule.Due(p)
	if skip != nil {
		return d, skip
	}
	return d, nil
}

// termWrite is a claim's write: the new term and the metadata that records it.
type termWrite struct {
	term        int64
	acquiredAt  time.Time
	occurrence  time.Time // the scheduled occurrence it runs, or the trigger's time; zero without one
	cause       *Cause    // why it runs; nil: a run without a schedule or a trigger
	lastSuccess time.Time // when the last run that exited 0 ended; zero if unknown
	now         time.Time // the service time of the claim
	md          map[string]string
	// foundLost, if set, is not a claim: md records the attempt last
	// started as found lost, and the attempt then skips with it.
	foundLost *SkipError
}

// newTerm checks p, the metadata as of l's acquire, and makes the new term's write.
func (a *attempt) newTerm(l *Lease, p *Properties) (termWrite, error) {
	cfg := a.e.cfg
	now := maxTime(p.Date, l.AcquiredAt)
	at := *p
	at.Date, at.State = now, StateAvailable // as of our acquire: free
	// A trigger that no claim consumed yet runs now, whatever the window,
	// the schedule or --once say (a pause held the acquire off before).
	trig := a.pendingTrigger(p)
	var due Due
	if trig == nil {
		if withinWindow(&at, a.w.OncePer) {
			return termWrite{}, skipError(p, a.w.OncePer)
		}
		var err error
		if due, err = a.due(&at); err != nil {
			return termWrite{}, err // --schedule: nothing due, already started, a retry not due
		}
	}
	if err := a.pollCheck(p); err != nil {
		var skip *SkipError
		if trig == nil || !errors.As(err, &skip) {
			return termWrite{}, err // --once, or another --slots recorded (slots.go)
		}
	}
	if due.FoundLost {
		md := lowered(p.Metadata)
		if r, _ := at.LastAttempt(); r != nil {
			md[mdLostAt] = strconv.FormatInt(r.Term, 10) + "," + formatTime(now)
		}
		return termWrite{md: md, foundLost: &SkipError{Reason: SkipRetryLater, Occurrence: due.Occurrence,
			Attempt: due.Attempt, RetryAt: due.RetryAt}}, nil
	}
	stored, err := parseTerm(p.Metadata[mdTerm])
	if err != nil {
		return termWrite{}, &StorageError{Op: "read term", Err: err, kind: kindPermanent, summary: "refused",
			Hint: "fix or remove the blob's term metadata; leaderrun will not guess a fencing token"}
	}
	// A blob made again after it was lost continues from the highest term
	// this contender saw: the term never goes back.
	term := max(stored, a.termSeen) + 1
	acquiredAt := l.AcquiredAt
	if acquiredAt.IsZero() {
		acquiredAt = p.Date
	}
	// The run's start goes in the same write (one request fewer per run):
	// the command starts right after the claim, and a run skipped by
	// --once-per returned above, before any write.
	md := startRun(p.Metadata, Run{Holder: cfg.Identity, Term: term, Start: now})
	md[mdHolder] = cfg.Identity
	md[mdTerm] = strconv.FormatInt(term, 10)
	md[mdLeaseDuration] = strconv.Itoa(int(cfg.Duration / time.Second))
	md[mdAcquiredAt] = formatTime(acquiredAt)
	md[mdVersion] = cfg.Version
	md[mdClaim] = a.nonce
	delete(md, mdLostAt) // of a run the history now holds
	if mode := a.w.mode(); mode != "" {
		md[mdMode] = mode
	} else {
		delete(md, mdMode)
	}
	var cause *Cause
	switch {
	case trig != nil:
		cause = &Cause{Trigger: TriggerManual, Attempt: 1, Occurrence: trig.At, Missed: -1, By: trig.By, Reason: trig.Reason}
		md[mdTriggered] = strconv.FormatInt(term, 10) + "," + trig.Nonce
	case a.w.Schedule != nil && !due.Occurrence.IsZero():
		md[mdSchedule], md[mdOccurrence] = a.w.Schedule.String(), formatTime(due.Occurrence)
		md[mdAttempt] = strconv.Itoa(max(due.Attempt, 1))
		cause = &Cause{Trigger: due.trigger(), Attempt: max(due.Attempt, 1), Occurrence: due.Occurrence, Missed: due.Missed}
	}
	var occ time.Time
	if cause != nil {
		md[causeKey(term)] = encodeCause(*cause)
		occ = cause.Occurrence
	}
	if cfg.Slots > 1 {
		md[mdSlots] = strconv.Itoa(cfg.Slots)
	}
	var lastSuccess time.Time
	if r := LastSuccess(p.Metadata); r != nil {
		lastSuccess = r.End
	}
	return termWrite{term: term, acquiredAt: acquiredAt, occurrence: occ, cause: cause, lastSuccess: lastSuccess,
		now: now, md: fitMetadata(md)}, nil
}

// claimOverwritten is told of a read without our nonce: a claim of ours
// that may have landed unanswered is not there (any more). If the blob
// still records it as its latest run, it landed, and another holder's claim
// over it (our lease having lapsed) was taken back: ours is still to take
// back, by our next claim or the attempt's cleanup (a.held, lapsed). If the
// history shows it under a later run, that claim archived it: a run that
// never started, which cannot be taken back now.
func (a *attempt) claimOverwritten(p *Properties) {
	if !a.claimSent {
		return
	}
	a.claimSent = false
	if p.Term <= a.claimTerm {
		return // no claim since ours: ours never landed
	}
	h := newLease(a.b, a.e.cfg, a.e.dice, a.leaseID, time.Now(), time.Time{})
	h.Term, h.meta, h.preRun, h.lapsed = a.claimTerm, a.claimMD, a.claimBase, true
	if a.parent != nil {
		h.Name, h.Slot = a.parent.b.name, a.slot
	}
	switch {
	case h.standsIn(p.Metadata):
		a.e.log.Debug("a claim whose answer was lost had landed, and is again the latest run: to take back", "term", h.Term)
		a.held = h
	case h.archivedIn(p.Metadata):
		// It landed, made from a version with any earlier claim of ours
		// taken back (takeBackHeld): nothing older is left to take back.
		a.held = nil
		a.e.log.Warn("a claim whose answer was lost had landed, and another holder took the lease over it: history shows a run that never started, and it could not be taken back",
			"term", h.Term)
	}
}

// takeBackHeld is told of a read that a new claim of this attempt is made
// from, while an earlier claim of the attempt was never handed over (the
// renewal before the handover failed, and the lease was acquired again):
// that claim's run never started. If the blob still records it as its
// latest run (nobody claimed since, or one who did took theirs back), the
// new claim takes it back in the same write: p is returned as if it had
// never been made, its claimed keys as before it (Lease.ReleaseUnused's
// rule, the term kept). If a later claim archived it, it cannot be taken
// back: one warning names its term.
func (a *attempt) takeBackHeld(p *Properties) *Properties {
	h := a.held
	if h == nil || h.preRun == nil {
		return p
	}
	// a.held stays until a write made from p lands: a write refused or
	// lost leaves the old claim standing, for the next read (or cleanup:
	// Lease.ReleaseUnused, from a read, since h lapsed) to take back.
	h.mu.Lock()
	stands, archived := h.standsIn(p.Metadata), h.archivedIn(p.Metadata)
	h.mu.Unlock()
	switch {
	case stands:
		q := newProperties(p.State, takenBack(p.Metadata, h.preRun), p.Date)
		q.Exists, q.etag, q.Created = p.Exists, p.etag, p.Created
		a.e.log.Debug("an earlier claim of ours, never handed over, is taken back by the new one", "term", h.Term)
		return q
	case archived:
		a.held = nil // nothing left to take back: warned once
		a.e.log.Warn("the claim of a run that never started could not be taken back: history shows it, and it counts for --once-per and --schedule",
			"term", h.Term, "error", errArchived)
	}
	return p
}

// ownClaim reports whether p's metadata holds this attempt's claim.
func (a *attempt) ownClaim(p *Properties) bool {
	return a.nonce != "" && p != nil && p.Metadata[mdClaim] == a.nonce
}

// adopt takes over the term that our own claim, found in p, wrote; what
// the blob recorded before it is what that claim was made from (claimBase),
// for ReleaseUnused to put back.
func (a *attempt) adopt(l *Lease, p *Properties) {
	l.Term, l.meta, l.runStartRecorded = p.Term, p.Metadata, p.Metadata[mdLastRunStart] != ""
	l.preRun = a.claimBase
	if !p.AcquiredAt.IsZero() {
		l.AcquiredAt = p.AcquiredAt
	}
	if c, ok := decodeCause(p.Metadata[causeKey(p.Term)]); ok {
		l.Cause, l.Occurrence = &c, c.Occurrence
	}
	if r := LastSuccess(p.Metadata); r != nil {
		l.LastSuccess = r.End
	}
	l.sawDate(p.Date)
}

const minReadGrace = 100 * time.Millisecond // the least wait for the read sent with the acquire

// reusable returns pr's read if it has the ETag of the acquire's answer. One
// in flight is waited for 2×rtt (the acquire's), at least minReadGrace, from
// when it was sent; then the claim reads on its own.
func reusable(pr *inflight, ans answer, rtt time.Duration) *Properties {
	if ans.ETag == "" || ans.Date.IsZero() || !waitFor(pr.done, time.Until(pr.sent.Add(max(2*rtt, minReadGrace)))) {
		return nil
	}
	p := pr.p // a failed read is simply not used
	if p == nil || !p.Exists || p.etag != ans.ETag {
		return nil
	}
	return p
}

// inflight is the blob's read sent along with an acquire, waited for later
// or abandoned; or a read had before (answered).
type inflight struct {
	done   chan struct{} // closed once p is set
	p      *Properties   // nil if the read failed
	sent   time.Time     // when the read was sent; zero: answered before
	cancel context.CancelFunc
}

// readAlong sends the blob's read on its own goroutine, bounded like any of a's.
func (a *attempt) readAlong(ctx context.Context) *inflight {
	rctx, cancel := context.WithDeadline(ctx, a.requestDeadline())
	r := &inflight{done: make(chan struct{}), sent: time.Now(), cancel: cancel}
	b := a.b
	go func() {
		defer close(r.done)
		r.p, _ = b.getProperties(rctx)
	}()
	return r
}

// answered is a read had before, as if just come.
func answered(p *Properties) *inflight {
	r := &inflight{done: make(chan struct{}), p: p, cancel: func() {}}
	close(r.done)
	return r
}

// abandon cancels the read and waits for its goroutine; nil-safe, repeatable.
func (r *inflight) abandon() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}
