package lease

// lease.go: the Lease that Acquire returns: what it holds, the service time
// it tracks, the run records it writes, and Release (keeper: keeper.go).

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

const releaseTimeout = 5 * time.Second // bounds a release, from a fresh context

// Lease is a held lease: the term it began, and the keeper that renews it.
//
// Use: Acquire → Keep → RecordRunStart → start the child → watch Lost →
// (child exits) → RecordRunEnd → Release. If Lost closes, stop the child by
// LostErr().StopAt and SIGKILL it by LostErr().KillBy, then Release.
type Lease struct {
	ID         string    // the lease ID held (LEADERRUN_LEASE_ID)
	Term       int64     // the fencing token (LEADERRUN_TERM): grows at every acquisition
	Name       string    // the lease name (LEADERRUN_LEASE): the blob name of slot 0
	Slot       int       // the slot held (LEADERRUN_SLOT): 0 … Config.Slots−1; its blob is SlotBlob(Name, Slot)
	URL        string    // the blob URL, no query (LEADERRUN_LEASE_URL)
	Identity   string    // this holder (LEADERRUN_IDENTITY)
	AcquiredAt time.Time // when the term began, by the service's clock
	Occurrence time.Time // the scheduled occurrence this term runs, or its trigger's time (LEADERRUN_OCCURRENCE); zero without either
	// Cause is why this term runs: a scheduled occurrence, a retry of one,
	// or a trigger (LEADERRUN_TRIGGER, LEADERRUN_ATTEMPT, LEADERRUN_MISSED);
	// nil for a run without a schedule or a trigger.
	Cause *Cause
	// LastSuccess is when the last run that exited 0 ended, as the lease
	// recorded it before this term (LEADERRUN_LAST_SUCCESS); zero if unknown.
	LastSuccess time.Time
	Duration    time.Duration // the lease duration
	StopBudget  time.Duration // the grace after the stop signal once Lost closes: KillGrace capped at Duration/3

	b             *Blob
	renewInterval time.Duration
	log           hclog.Logger
	dice          *dice // the Elector's (Config.Rand)

	lost      chan struct{}
	renewedAt chan time.Time
	keepOnce  sync.Once

	mu               sync.Mutex
	tOK              time.Time         // send time of the last successful acquire or renew (monotonic)
	lostErr          *LostError        // set before lost is closed
	meta             map[string]string // the blob's metadata as last written by us
	runStartRecorded bool              // the claim wrote lastrunstart: the first RecordRunStart has nothing to do
	preRun           map[string]string // the metadata before the claim: ReleaseUnused puts its claimed keys back
	// lapsed: the renewal before the handover failed: the lease may have
	// lapsed, others written, and the lease been acquired again with its
	// ID; meta may not be the blob's.
	lapsed bool
	date   time.Time // the latest service Date seen
	dateAt time.Time // when that answer arrived (monotonic)
	// dateHi and dateHiSent bound the service's clock from above: it read
	// before dateHi when dateHiSent (monotonic) was sent (an answer's
	// Date, truncated to the second, plus a second); of the answers whose
	// send time is known, the one that bounds it closest.
	dateHi, dateHiSent time.Time
	stopKeeper         context.CancelFunc
	keeperDone         chan struct{}
	releasing          bool // Release was called: the keeper exits without closing Lost, a second Release at once
	// placeLeft closes once the deputy's place this holder held while it
	// waited is given up (deputy.go); nil if it held none.
	placeLeft <-chan struct{}
}

func newLease(b *Blob, cfg Config, d *dice, id string, sent, date time.Time) *Lease {
	l := &Lease{
		ID: id, Name: b.name, URL: b.url, Identity: cfg.Identity,
		AcquiredAt: date, Duration: cfg.Duration, StopBudget: cfg.StopBudget(),
		b: b, renewInterval: cfg.RenewInterval, log: cfg.Logger.Named("lease"), dice: d,
		lost: make(chan struct{}), renewedAt: make(chan time.Time, 1),
		tOK: sent, meta: map[string]string{},
	}
	l.sawDate(date)
	l.sawDateSent(date, sent)
	return l
}

// sawDate records a service Date and when it arrived.
func (l *Lease) sawDate(d time.Time) {
	if d.IsZero() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.date, l.dateAt = d, time.Now()
}

// sawDateSent records that the request sent at sent (monotonic) was
// answered with Date d: the service's clock read before d plus a second
// when it was sent (Date is stamped after the request arrived, and
// truncated to the second). It is kept if it bounds the clock closer than
// the bound kept.
func (l *Lease) sawDateSent(d, sent time.Time) {
	if d.IsZero() || sent.IsZero() {
		return
	}
	hi := d.Add(time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dateHi.IsZero() || hi.Add(time.Since(sent)).Before(l.dateHi.Add(time.Since(l.dateHiSent))) {
		l.dateHi, l.dateHiSent = hi, sent
	}
}

// serviceLatest is the latest the service's clock may read now, rounded up
// to the second: what an end is recorded at, so that what is measured from
// it (the delay before a retry) is never shorter than the real one. Zero if
// no Date was seen; the latest answer's Date plus a second and the time
// since it arrived if no send time is known.
func (l *Lease) serviceLatest() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var t time.Time
	switch {
	case !l.dateHi.IsZero():
		t = l.dateHi.Add(time.Since(l.dateHiSent))
	case !l.date.IsZero():
		t = l.date.Add(time.Second + time.Since(l.dateAt))
	default:
		return time.Time{}
	}
	t = t.UTC()
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

// serviceNow is the latest answer's Date plus the monotonic time since, to
// the second; never the local wall clock. Zero if no Date was seen.
func (l *Lease) serviceNow() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.date.IsZero() {
		return time.Time{}
	}
	return l.date.Add(time.Since(l.dateAt)).UTC().Truncate(time.Second)
}

// RecordRunStart records the run's start (serviceNow) right before the
// child starts; right after Acquire, the claim did (at the later of the
// acquire's Date and its read's). Transient failures are retried for up to
// 5 s. Under --once-per it makes later contenders skip: a failure should
// stop the run.
func (l *Lease) RecordRunStart(ctx context.Context) error {
	if l.runStartRecorded {
		l.runStartRecorded = false
		return nil
	}
	start := l.serviceNow()
	if start.IsZero() {
		return &StorageError{Op: "record run start", Err: errors.New("no Date header seen from the service"),
			kind: kindPermanent, summary: "no service time"}
	}
	return l.updateMetadata(ctx, "record run start", func(md map[string]string) map[string]string {
		return startRun(md, Run{Holder: l.Identity, Term: l.Term, Start: start})
	})
}

// RecordRunEnd records the run's end (serviceLatest: never before the real
// one, a retry's delay counts from it) and exit (recordRunEnd). Call it
// before Release; after Lost it usually fails: a warning, not more.
func (l *Lease) RecordRunEnd(ctx context.Context, exitCode int) error {
	end := l.serviceLatest()
	return l.updateMetadata(ctx, "record run end", func(md map[string]string) map[string]string {
		return recordRunEnd(md, Run{Holder: l.Identity, Term: l.Term, Start: parseTime(md[mdLastRunStart]), End: end, ExitCode: &exitCode})
	})
}

// updateMetadata writes, with the lease ID, what edit makes of a copy of the
// metadata last written, retrying transient failures within requestTimeout.
func (l *Lease) updateMetadata(ctx context.Context, op string, edit func(map[string]string) map[string]string) error {
	l.mu.Lock()
	md := edit(maps.Clone(l.meta))
	l.mu.Unlock()
	err := retryTransient(ctx, l.dice, requestTimeout, func(rctx context.Context) error {
		sent := time.Now()
		ans, err := l.b.api.setMetadata(rctx, l.ID, "", md)
		switch {
		case err == nil:
			l.sawDate(ans.Date)
			l.sawDateSent(ans.Date, sent)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		return renamed(err, op)
	})
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.meta = md
	l.mu.Unlock()
	return nil
}

// ReleaseUnused gives back a lease whose COMMAND never started: it takes
// back the claim's run (the run keys, the occurrence it started and the
// trigger it consumed, as they were before the claim: no run in the history
// that never happened, no once-per window, scheduled occurrence, retry or
// trigger spent), then releases. The term
// stays: it only grows. It works on ctx's values, not its cancellation (a
// stop request is what usually brings it here), within requestTimeout for
// the take-back and releaseTimeout for the release. A take-back that fails
// is one warning: the blob then shows a run that never started.
func (l *Lease) ReleaseUnused(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	if l.preRun != nil {
		var err error
		if l.lapsed {
			err = l.takeBackRead(ctx)
		} else {
			err = l.updateMetadata(ctx, "take back the claim", func(md map[string]string) map[string]string {
				return takenBack(md, l.preRun)
			})
		}
		if err != nil {
			l.log.Warn("the claim of a run that never started could not be taken back: history shows it, and it counts for --once-per and --schedule",
				"term", l.Term, "error", err)
		} else {
			l.preRun = nil
		}
	}
	return l.Release(ctx)
}

// takenBack is md with a claim taken back: its claimed keys as in preRun,
// the metadata the claim was made from, every other key (the term) kept.
// The claim's nonce goes too: a claim taken back no longer stands, and a
// later try of the same Acquire must make a new one (a new term, its own
// keys), not adopt this one, whose keys are gone.
func takenBack(md, preRun map[string]string) map[string]string {
	out := lowered(md)
	for k := range out {
		if claimedKey(k) {
			delete(out, k)
		}
	}
	for k, v := range preRun {
		if claimedKey(k) {
			out[k] = v
		}
	}
	delete(out, mdClaim)
	return out
}

// standsIn reports whether md's latest run is still the one l's claim
// recorded: its term, holder and start.
func (l *Lease) standsIn(md map[string]string) bool {
	r, ok := lastRun(md)
	return ok && r.Term == l.Term && r.Holder == l.Identity && md[mdLastRunStart] != "" && md[mdLastRunStart] == l.meta[mdLastRunStart]
}

// archivedIn reports whether md's history holds l's claim (as its latest
// run, or an earlier one: ask standsIn first).
func (l *Lease) archivedIn(md map[string]string) bool {
	for _, r := range ReadHistory(md, false) {
		if r.Term == l.Term && r.Holder == historyHolder(l.Identity) {
			return true
		}
	}
	return false
}

// errArchived: a claim to take back was archived by a later one.
var errArchived = errors.New("another holder's claim came after it")

// takeBackRead takes the claim back for a lease that may have lapsed
// (l.lapsed): it acquires the lease with our ID first (ours still, or
// free; another's: that holder's claim decides, and ours cannot be taken
// back), then reads the blob, and writes from that read, not from meta,
// If-Match its ETag, so that nothing another holder wrote meanwhile is
// undone. Only a claim still the blob's latest run is taken back; one that
// a later claim archived cannot be (errArchived); one not there, nothing
// is to do.
func (l *Lease) takeBackRead(ctx context.Context) error {
	const op = "take back the claim"
	return retryTransient(ctx, l.dice, requestTimeout, func(rctx context.Context) error {
		_, aerr := l.b.api.acquireLease(rctx, l.ID, int(l.Duration/time.Second))
		if se := asStorageError(aerr); aerr != nil && (se == nil || se.Transient()) {
			return renamed(aerr, op)
		}
		p, err := l.b.getProperties(rctx)
		if err != nil {
			return renamed(err, op)
		}
		l.mu.Lock()
		stands, archived := l.standsIn(p.Metadata), l.archivedIn(p.Metadata)
		l.mu.Unlock()
		switch {
		case archived && !stands:
			return errArchived
		case !stands:
			return nil // nothing of ours to take back, held by another or not
		case aerr != nil:
			return renamed(aerr, op) // stands, and the lease is another's (or the blob gone)
		}
		md := takenBack(p.Metadata, l.preRun)
		sent := time.Now()
		ans, err := l.b.api.setMetadata(rctx, l.ID, p.etag, md)
		if se := asStorageError(renamed(err, op)); se != nil && se.StatusCode == http.StatusPreconditionFailed && se.Code == codeConditionNotMet {
			retry := *se // written since the read: read again
			retry.kind = kindTransient
			return &retry
		}
		if err != nil {
			return renamed(err, op)
		}
		l.sawDate(ans.Date)
		l.sawDateSent(ans.Date, sent)
		l.mu.Lock()
		l.meta = md
		l.mu.Unlock()
		return nil
	})
}

// Release stops the keeper, then releases the lease within 5 s of a fresh
// context (ctx's values, not its cancellation), retrying transient failures.
// Call it after the child has exited, never before; it is safe after Lost (a
// lease gone is no error) and more than once. If it fails, the lease expires
// by itself within Duration.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.releasing {
		l.mu.Unlock()
		return nil
	}
	l.releasing = true
	stop, done := l.stopKeeper, l.keeperDone
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	if l.placeLeft != nil {
		defer func() { <-l.placeLeft }() // given up behind the acquire: bounded by its own timeout
	}

	return retryTransient(context.WithoutCancel(ctx), l.dice, releaseTimeout, func(rctx context.Context) error {
		_, err := l.b.api.releaseLease(rctx, l.ID)
		se := asStorageError(err)
		switch {
		case err == nil:
			l.log.Debug("released lease", "term", l.Term)
			return nil
		case se.leaseGone():
			l.log.Debug("lease already gone at release", "code", se.Code)
			return nil
		}
		return se
	})
}
