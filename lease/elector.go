package lease

// elector.go: the public face of acquiring: Elector, WaitOptions, Acquire
// (the attempt behind it: acquire.go; the claim: claim.go); and how one
// Acquire call waits as WaitOptions say and bounds its requests: each
// request's deadline, the failure budget, the poll interval, a blob gone
// under a holder, a holder or Hold that keeps it waiting, OnWait and OnHold,
// and Ready, asked once per poll.

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// Elector acquires the lease for one holder. It does not guarantee that one
// holder acts at a time: with the keeper, it guarantees that this holder
// learns of the loss (Lease.Lost) in time to stop its child before another
// can acquire. Fencing the child's writes needs the term (LEADERRUN_TERM).
type Elector struct {
	b    *Blob
	cfg  Config
	log  hclog.Logger
	dice *dice // Config.Rand's draws
}

// NewElector checks cfg (a *ConfigError if unsafe) and returns an Elector for
// the lease blob b (NewLeaseBlob).
func NewElector(b *Blob, cfg Config) (*Elector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Elector{b: b, cfg: cfg, log: cfg.Logger.Named("lease"), dice: newDice(cfg.Rand)}, nil
}

// Config returns the checked configuration, defaults filled in.
func (e *Elector) Config() Config { return e.cfg }

// WaitOptions says how Acquire waits. The callbacks run on Acquire's
// goroutine and must not block.
type WaitOptions struct {
	NoWait  bool          // try once: held by someone else → *HeldError
	Timeout time.Duration // 0 waits for ever; on expiry → *HeldError
	// HeldIsEnough, with NoWait, ends at the first refused acquire with a
	// *HeldError naming no holder, without a read, so a losing contender
	// costs one request (for --no-wait -E 0 -q: held or skipped end alike).
	HeldIsEnough bool
	// ReadFirst makes the first step a read, not an optimistic acquire, for a
	// contender that expects to come late (--splay): a run already started,
	// or a holder, is then one request; a free lease one round trip more.
	ReadFirst bool
	// StorageTimeout: how long storage failures in a row (throttling, 5xx,
	// timeouts, network) are retried without a Timeout; 0: DefaultStorageTimeout.
	StorageTimeout time.Duration
	// OncePer skips (a *SkipError) when a run started less than OncePer ago
	// by the service's clock: found after acquiring (the lease is released
	// first), or on the current holder's run (even with NoWait). 0 is off.
	OncePer time.Duration
	// Once skips (SkipOnce) when the lease records a run that ended with
	// status 0, by anyone: on every poll read and again in the claim
	// (released first). Refused with more than one slot (slots.go says why).
	Once bool
	// OncePerHost, if set, is this host's name: skip (SkipOncePerHost) when
	// its done marker NAME~done/HOST exists (Lease.MarkDone), checked before
	// the first acquire and again once acquired (released first).
	OncePerHost string
	// Schedule, if set, runs only the occurrence due (claim.go), by the
	// service's clock, asked on every poll read and in the claim (which records
	// it; the Lease carries it); none due: SkipNotDue, SkipStarted, SkipMissed.
	Schedule Schedule
	OnWait   func(p *Properties) // if set: told when the wait starts and when the holder changes
	// OnTry, if set, is called right before each Acquire Lease request (also
	// the second after creating a missing blob), to prepare in parallel what
	// must be ready once held (the child's guard); the acquire may be refused.
	OnTry func()
	// Hold, if set, is asked before each acquire that would be sent (not the
	// second after creating a missing blob), at every poll that finds the
	// lease free, so it must be cheap (no I/O). A non-empty answer is the
	// reason not to acquire: with NoWait a *HeldError with that Reason,
	// nothing sent; waiting, reads only until Hold answers "" and the lease
	// is free (Timeout applies).
	Hold   func() string
	OnHold func(reason string) // if set: told when Hold first holds off a waiting Acquire, and of new reasons
	// Ready, if set, says whether this host may lead now: "" when ready,
	// else why not (the reason of a *HeldError). It is asked before the
	// first acquire or read and once per poll after that, never more
	// often, so it may take time (a process: --ready-cmd). While it is not
	// ready, no acquire is sent and the deputy's place is neither taken
	// nor kept; reads go on. Its changes are for the caller to tell.
	Ready func(ctx context.Context) string
	// Deputy, if more than 0 and shorter than PollInterval, makes this
	// waiting follower stand by as the deputy when it can take the place
	// (deputy.go): it then reads the lease every Deputy (±20 %) instead of
	// every PollInterval; a follower without the place reads it at some
	// polls, never more than once a poll: the first, the first after a
	// change of term, and one every 15 s. Off with NoWait, with Schedule
	// and with several slots.
	Deputy time.Duration
	// OnDeputy, if set, is told when this follower takes the deputy's
	// place (true) and when it loses or gives it up while still waiting
	// (false); not when Acquire ends, which gives the place up anyway.
	OnDeputy func(standing bool)
}

// Acquire acquires the lease, waiting as w says, and writes the new term to
// the blob's metadata. The Lease is held but not kept: call Keep before
// starting the child.
//
// Errors: *HeldError (ErrHeld) when not acquired with NoWait or by Timeout
// (Reason set when Hold kept it off); *SkipError (ErrSkipped) for a skip;
// *StorageError (ErrUnavailable) when the storage refuses (400, 401, 403,
// …: at once) or stays unreachable (network, 408, 429, 5xx: retried with
// capped exponential backoff and full jitter, for StorageTimeout or until
// Timeout); ctx.Err() when ctx ends (promptly).
//
// The optimistic acquire goes alone: a losing contender costs the blob two
// requests (the refused acquire, a read naming the holder), and a fleet
// starting in the same second does not triple its load. A waiting follower
// then reads every PollInterval (±20 %) and acquires only a lease neither
// leased nor breaking. A free lease costs three round trips (acquire; the
// blob's and the marker's reads; the term's write); a handover reuses the
// poll read that found it free (claim says why that is safe).
func (e *Elector) Acquire(ctx context.Context, w WaitOptions) (*Lease, error) {
	for _, c := range []struct {
		field string
		d     time.Duration
	}{{"timeout", w.Timeout}, {"once-per window", w.OncePer}, {"storage timeout", w.StorageTimeout}} {
		if c.d < 0 {
			return nil, configErr(c.field, "%s: must not be negative", c.d)
		}
	}
	if w.StorageTimeout == 0 {
		w.StorageTimeout = DefaultStorageTimeout
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if w.Once && e.cfg.Slots > 1 {
		return nil, configErr("slots", "--once with --slots %d: --once runs COMMAND once for the fleet, so it takes one slot", e.cfg.Slots)
	}
	a := &attempt{e: e, b: e.b, w: w, leaseID: uuid.NewString(), nonce: uuid.NewString(), askReady: true}
	if w.Timeout > 0 {
		a.deadline = time.Now().Add(w.Timeout)
	}
	if err := a.hostDone(ctx); err != nil {
		return nil, err // slots.go: --once-per-host, this host is done
	}
	l, err := a.run(ctx)
	// The deputy's place, if held, is given up whatever the outcome: behind
	// a lease acquired (its Release waits for it), so that COMMAND's start
	// does not wait for it; at once otherwise.
	left := a.leavePlace(ctx)
	if l != nil {
		l.placeLeft = left
	} else {
		<-left
	}
	if err != nil {
		if ctx.Err() != nil {
			a.takeBack(ctx) // asked to stop: a claim of ours that may stand
		}
		if term, ok := a.mayStand(); ok {
			a.e.log.Warn("a claim whose answer was lost may stand and could not be taken back: history may show a run that never started, and it counts for --once-per and --schedule",
				"term", term, "error", err)
		}
		a.cleanup(ctx)
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		// Asked to stop as the claim landed: nothing has run, the claim is
		// taken back and the lease given up (the caller starts nothing).
		if rerr := l.ReleaseUnused(ctx); rerr != nil {
			a.e.log.Debug("release after a stop request failed", "error", rerr)
		}
		return nil, err
	}
	return l, nil
}

// takeBack is for an attempt asked to stop (ctx ended) while a claim of its
// may stand unanswered: for each such claim it acquires the lease again
// with our lease ID (ours still, or free) and reads the blob: a claim of
// ours found is taken back (Lease.ReleaseUnused), none found means none
// stands. Bounded by two request timeouts from a fresh context; a lease
// held by another since is left to its holder (whose claim archives or
// skips ours: mayStand then warns).
func (a *attempt) takeBack(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*requestTimeout)
	defer cancel()
	all := []*attempt{a}
	for _, i := range slices.Sorted(maps.Keys(a.slots)) {
		all = append(all, a.slots[i])
	}
	for _, s := range all {
		if !s.claimSent {
			continue
		}
		sent := time.Now()
		ans, err := s.b.api.acquireLease(dctx, s.leaseID, int(s.e.cfg.Duration/time.Second))
		if err != nil {
			continue
		}
		s.unsure = true
		l := newLease(s.b, s.e.cfg, s.e.dice, s.leaseID, sent, ans.Date)
		p, err := s.b.getProperties(dctx)
		switch {
		case err != nil:
			continue // cleanup releases it; the claim may stand
		case s.ownClaim(p):
			s.adopt(l, p)
			s.claimSent, s.unsure = false, false
			if err := l.ReleaseUnused(dctx); err != nil {
				s.e.log.Debug("release after taking back a claim failed", "error", err)
			}
		default:
			s.claimOverwritten(p) // none of ours stands; cleanup releases
		}
	}
}

// mayStand reports whether a claim of this attempt (or of one of its slots)
// went out and was never answered nor read back, and the term it wrote.
func (a *attempt) mayStand() (term int64, ok bool) {
	if a.claimSent {
		return a.claimTerm, true
	}
	for _, i := range slices.Sorted(maps.Keys(a.slots)) {
		if s := a.slots[i]; s.claimSent {
			return s.claimTerm, true
		}
	}
	return 0, false
}

// holderMayRun: the blob (or container) is gone. A follower that saw it held
// does not create it again until the lease duration it last saw has passed
// since it first found it gone: that holder learns of the loss at its next
// renewal and stops its child within its lease (the safety rule).
func (a *attempt) holderMayRun() bool {
	if a.seen == nil {
		return false
	}
	d := a.seen.LeaseDuration
	if d <= 0 {
		d = MaxDuration
	}
	if a.goneAt.IsZero() {
		a.goneAt = time.Now()
		a.e.log.Info("the lease blob is gone under its holder: waiting out its lease before creating it again",
			"holder", a.seen.Holder, "term", a.seen.Term, "wait", d)
	}
	return time.Since(a.goneAt) < d
}

// requestCtx bounds one request (requestDeadline), noting when it was sent.
func (a *attempt) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	a.reqStart = time.Now()
	return context.WithDeadline(ctx, a.requestDeadline())
}

// requestDeadline: requestTimeout from now, or the wait's deadline if ahead.
func (a *attempt) requestDeadline() time.Time {
	now := time.Now()
	d := now.Add(requestTimeout)
	if !a.deadline.IsZero() && a.deadline.After(now) {
		d = minTime(d, a.deadline)
	}
	return d
}

// failed records a storage failure: the error to give up with, or nil after
// a full-jitter backoff. The budget for failures in a row is Timeout's
// deadline, else StorageTimeout: a throttled fleet keeps trying, spread out.
// The first retry of a run of failures says so at info level, once, with
// the budget; the others log at debug; one that outlasts the budget, by
// the caller.
func (a *attempt) failed(ctx context.Context, err error) error {
	se := asStorageError(err)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case se == nil:
		return err
	case !se.Transient():
		return se
	}
	a.failures.count(a.reqStart)
	if a.expired() && a.seen != nil {
		return a.heldError(a.seen) // the wait is over; the last thing known is a holder
	}
	if a.expired() || (a.deadline.IsZero() && time.Since(a.failures.since) >= a.w.StorageTimeout) {
		return se
	}
	delay := a.e.dice.fullJitter(a.failures.n)
	budget := time.Until(a.deadline)
	if a.deadline.IsZero() {
		budget = time.Until(a.failures.since.Add(a.w.StorageTimeout))
		delay = min(delay, budget)
	}
	if a.failures.n == 1 {
		a.e.log.Info("storage not answering; retrying", "error", se, "for_up_to", budget.Round(time.Second))
	}
	a.e.log.Debug("storage request failed, retrying", "error", se, "retry_in", delay)
	return a.sleep(ctx, delay)
}

func (a *attempt) succeeded() { a.failures.reset() }

func (a *attempt) expired() bool { return !a.deadline.IsZero() && !time.Now().Before(a.deadline) }

// pollWait sleeps one poll interval, ±20 %: the deputy's while this
// follower holds the deputy's place, else PollInterval; before it, the
// place is kept, taken or given up (standBy); after it, Ready is asked
// again before the next request.
func (a *attempt) pollWait(ctx context.Context) error {
	a.standBy(ctx)
	err := a.sleep(ctx, a.e.dice.jitter(a.pollEvery(), 0.2))
	a.askReady = true
	return err
}

// ready asks Ready, if set and not yet asked since the last poll wait: a
// follower not ready acquires nothing (holding) and gives its deputy's
// place up; an error is ctx's, ended during the check.
func (a *attempt) ready(ctx context.Context) error {
	if !a.askReady || a.w.Ready == nil {
		return nil
	}
	a.askReady = false
	a.notReady = a.w.Ready(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	if a.notReady != "" && a.place != nil {
		<-a.leavePlace(ctx)
		a.toldDeputy(false)
	}
	return nil
}

// sleep waits d, or until the wait's deadline, or until ctx ends.
func (a *attempt) sleep(ctx context.Context, d time.Duration) error {
	if !a.deadline.IsZero() {
		d = min(d, time.Until(a.deadline))
	}
	if d > 0 && waitFor(ctx.Done(), d) {
		return ctx.Err()
	}
	return nil
}

// giveUpOrWait gives up with NoWait or past the timeout (a *HeldError
// naming p's holder), else waits one poll interval (nil).
func (a *attempt) giveUpOrWait(ctx context.Context, p *Properties) error {
	if a.w.NoWait || a.expired() {
		return a.heldError(p)
	}
	return a.pollWait(ctx)
}

// heldWait: a read showed the lease held by held (nil: none to name, the
// free slots taken since): give up, or tell OnWait and wait a poll interval.
func (a *attempt) heldWait(ctx context.Context, held *Properties) error {
	if held != nil {
		a.seen = held
	}
	if a.w.NoWait && a.ownClaim(held) && !a.expired() {
		// The holder found our claim (its answer lost, our lease lapsed)
		// and skips: wait, within the storage budget, for it to let go,
		// then adopt the claim. --no-wait does not wait for another's run,
		// but this run is ours.
		if a.ownHeldSince.IsZero() {
			a.ownHeldSince = time.Now()
		}
		if time.Since(a.ownHeldSince) < a.w.StorageTimeout {
			return a.pollWait(ctx)
		}
	}
	if a.w.NoWait || a.expired() {
		return a.heldError(a.seen)
	}
	if held != nil {
		a.notify(held)
	}
	return a.pollWait(ctx)
}

// holding reports whether the acquire is held back: by Hold, or because
// this host is not ready (Ready, asked once per poll).
func (a *attempt) holding() bool {
	held := a.w.Hold != nil && a.heldBack(&a.reason, a.w.Hold())
	return held || a.notReady != ""
}

// heldBack notes reason (Hold's, a pause's; "" none) in *last, telling OnHold
// of a new one; it reports whether the acquire is held back.
func (a *attempt) heldBack(last *string, reason string) bool {
	changed := reason != *last
	*last = reason
	if reason != "" && changed {
		a.e.log.Debug("holding off the acquire", "reason", reason)
		if a.w.OnHold != nil && !a.w.NoWait {
			a.w.OnHold(reason)
		}
	}
	return reason != ""
}

// heldError names p's holder (nil: none) and Hold's or the pause's reason.
func (a *attempt) heldError(p *Properties) *HeldError {
	he := heldError(p)
	he.Reason = cmp.Or(a.reason, a.pauseReason, a.notReady)
	return he
}

// notify tells OnWait when the wait starts and when the holder changes.
func (a *attempt) notify(p *Properties) {
	key := p.Holder + "\x00" + strconv.FormatInt(p.Term, 10)
	if key == a.notified {
		return
	}
	a.notified = key
	a.e.log.Debug("waiting for the lease", "holder", p.Holder, "term", p.Term, "state", p.State)
	if a.w.OnWait != nil {
		a.w.OnWait(p)
	}
}
