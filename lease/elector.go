package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// Bounds and defaults.
const (
	MinDuration         = 15 * time.Second // Azure's shortest finite lease
	MaxDuration         = 60 * time.Second // Azure's longest finite lease
	DefaultDuration     = 15 * time.Second
	DefaultPollInterval = 2 * time.Second

	// killMargin: the child must be dead 1 s before the lease could pass
	// on, and SIGKILL gets 500 ms to take effect.
	killMargin = 1500 * time.Millisecond
	// minRetryWindow: the time between the first renewal and StopAt must
	// leave room for retries.
	minRetryWindow = time.Second
	// giveUpAfter: Acquire gives up after this much consecutive failure to
	// reach the storage.
	giveUpAfter = 10 * time.Second
	// releaseTimeout bounds a release, from a fresh context.
	releaseTimeout = 5 * time.Second
	// A renew request is bounded by a third of the time between a scheduled
	// renewal and the stop deadline, within these limits, so that a request
	// that hangs leaves room for at least two more tries (1.17 s for the
	// default 15 s lease).
	minRenewTry     = 1 * time.Second
	maxRenewTry     = 3 * time.Second
	minPollInterval = 100 * time.Millisecond
	maxIdentityLen  = 256
)

// Config is how an Elector acquires and keeps the lease.
type Config struct {
	// Duration is the lease duration: whole seconds from 15s to 60s; 0
	// means 15s. Infinite leases are refused.
	Duration time.Duration
	// RenewInterval is how often the keeper renews: more than 0 and at
	// most Duration/2; 0 means Duration/3.
	RenewInterval time.Duration
	// KillGrace is the child's grace between the stop signal and SIGKILL.
	// The keeper's StopBudget is min(KillGrace, Duration/3).
	KillGrace time.Duration
	// PollInterval is how often a waiting follower reads the blob, ±20 %
	// jitter; 0 means 2s.
	PollInterval time.Duration
	// Identity names this holder in the metadata: printable ASCII, at most
	// 256 characters. Version is written as leaderrunversion.
	Identity, Version string
	Logger            hclog.Logger
}

// StopBudget is the time between the stop signal and SIGKILL when the
// keeper loses the lease: min(KillGrace, Duration/3). Valid after NewElector.
func (cfg Config) StopBudget() time.Duration { return min(cfg.KillGrace, cfg.Duration/3) }

// withDefaults checks cfg and fills its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	d := cfg.Duration
	if d < MinDuration || d > MaxDuration || d%time.Second != 0 {
		return cfg, configErr("lease duration", "%s: want whole seconds from 15s to 60s (infinite leases are refused)", d)
	}
	if cfg.RenewInterval == 0 {
		cfg.RenewInterval = d / 3
	}
	if cfg.RenewInterval < time.Second || cfg.RenewInterval > d/2 {
		return cfg, configErr("renew interval", "%s: want at least 1s and at most half the lease duration (%s)", cfg.RenewInterval, d/2)
	}
	if cfg.KillGrace < 0 {
		return cfg, configErr("kill grace", "%s: must not be negative", cfg.KillGrace)
	}
	if window := d - killMargin - cfg.StopBudget() - cfg.RenewInterval; window < minRetryWindow {
		return cfg, configErr("renew interval", "%s leaves %s for retries before the stop deadline: want at least %s", cfg.RenewInterval, window, minRetryWindow)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.PollInterval < minPollInterval {
		return cfg, configErr("poll interval", "%s: want at least %s", cfg.PollInterval, minPollInterval)
	}
	if err := checkHeaderValue("identity", cfg.Identity, maxIdentityLen); err != nil {
		return cfg, err
	}
	if cfg.Version == "" {
		cfg.Version = "unknown"
	}
	if err := checkHeaderValue("version", cfg.Version, 64); err != nil {
		return cfg, err
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return cfg, nil
}

// checkHeaderValue: metadata travels in HTTP headers.
func checkHeaderValue(field, v string, maxLen int) error {
	if v == "" {
		return configErr(field, "empty")
	}
	if len(v) > maxLen {
		return configErr(field, "longer than %d characters", maxLen)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return configErr(field, "%s: only printable ASCII is allowed", strconv.Quote(v))
		}
	}
	if v[0] == ' ' || v[len(v)-1] == ' ' {
		return configErr(field, "%q: leading or trailing spaces are not allowed", v)
	}
	return nil
}

// Elector acquires the lease for one holder.
//
// It does not guarantee that only one holder acts at a time: it guarantees,
// with the keeper, that this holder learns of the loss (Lease.Lost) in time
// to stop its child before another holder can acquire. Fencing the child's
// writes needs the term (LEADERRUN_TERM).
type Elector struct {
	c   *Client
	cfg Config
	log hclog.Logger
}

// NewElector checks cfg (a *ConfigError if it cannot be safe) and returns an
// Elector for c's blob.
func NewElector(c *Client, cfg Config) (*Elector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Elector{c: c, cfg: cfg, log: cfg.Logger.Named("lease")}, nil
}

// Config returns the checked configuration, defaults filled in.
func (e *Elector) Config() Config { return e.cfg }

// WaitOptions says how Acquire waits.
type WaitOptions struct {
	NoWait  bool          // try once: held by someone else → *HeldError
	Timeout time.Duration // 0 waits for ever; on expiry → *HeldError
	// OncePer skips (a *SkipError) when a run started less than OncePer ago
	// by the service's clock: found after acquiring (the lease is released
	// first), or, as a contender, on the current holder's run (even with
	// NoWait). 0 is off.
	OncePer time.Duration
	// OnWait, if set, is called when the wait starts and when the holder
	// changes while waiting, on Acquire's goroutine: it must not block.
	OnWait func(p *Properties)
	// OnTry, if set, is called on Acquire's goroutine right before each
	// Acquire Lease request is sent: the first, a follower's acquire after
	// a read found the lease free, a retry after a failure, the second
	// one after creating a missing blob. It must not block. It lets the
	// caller prepare, in parallel with the request, what must be ready as
	// soon as the lease is held (leaderrun starts its child-process guard).
	// A call promises nothing: the acquire may still be refused.
	OnTry func()
}

// Acquire acquires the lease, waiting for it as w says, and writes the new
// term to the blob's metadata. The returned Lease is held but not yet kept:
// call Keep before starting the child.
//
// Errors: *HeldError (ErrHeld) when not acquired with NoWait or by Timeout;
// *SkipError (ErrSkipped) for a once-per skip; *StorageError
// (ErrUnavailable) when the storage refuses (400, 401, 403, …: at once) or
// cannot be reached for 10 s in a row (network, 408, 429, 5xx: retried with
// backoff); ctx.Err() when ctx ends (promptly, whatever is in flight).
//
// Followers poll with reads: after one optimistic acquire, a waiting
// follower reads the blob's properties every PollInterval (±20 %) and sends
// an acquire only when the lease is neither leased nor breaking.
//
// Round trips: the optimistic acquire goes out together with a read of the
// blob, so a free lease costs two round trips (acquire and read, then the
// write of the new term) and a held one a single round trip before
// NoWait's *HeldError; a follower's handover reuses the poll read that
// found the lease free (acquire, then the write). See claim for why
// reusing a read cannot make the term go wrong.
func (e *Elector) Acquire(ctx context.Context, w WaitOptions) (*Lease, error) {
	if w.Timeout < 0 {
		return nil, configErr("timeout", "%s: must not be negative", w.Timeout)
	}
	if w.OncePer < 0 {
		return nil, configErr("once-per window", "%s: must not be negative", w.OncePer)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a := &attempt{e: e, w: w, leaseID: uuid.NewString()}
	if w.Timeout > 0 {
		a.deadline = time.Now().Add(w.Timeout)
	}
	l, err := a.run(ctx)
	if err != nil {
		a.cleanup(ctx)
	}
	return l, err
}

// attempt is the state of one Acquire call.
type attempt struct {
	e        *Elector
	w        WaitOptions
	deadline time.Time // zero: no timeout
	// leaseID is proposed at every try of this Acquire call: re-acquiring
	// with the same ID is idempotent, so a lost answer cannot make us
	// wait for our own lease.
	leaseID string
	// unsure: an acquire with leaseID may have succeeded unseen (or a
	// release failed); cleanup releases it.
	unsure bool

	reqStart  time.Time   // when the latest request was sent
	failSince time.Time   // when the first request of the current run of failures was sent
	failures  int         // failures in that run
	seen      *Properties // the latest held state read
	notified  string      // holder and term last passed to OnWait
	contended int         // acquires refused although a read said free
}

// errHeldNow: the acquire was refused because the lease is held.
var errHeldNow = errors.New("lease: held (acquire refused)")

func (a *attempt) run(ctx context.Context) (*Lease, error) {
	var (
		free *Properties // the latest poll read, which found the lease free
		next *Properties // a read already made that serves as the next poll
	)
	read := false // the first step is one optimistic acquire
	for {
		if read {
			p := next
			next = nil
			if p == nil {
				rctx, cancel := a.requestCtx(ctx)
				var err error
				p, err = a.e.c.getProperties(rctx)
				cancel()
				if err != nil {
					if err := a.failed(ctx, err); err != nil {
						return nil, err
					}
					continue
				}
			}
			a.succeeded()
			if p.State.held() {
				a.contended = 0
				if withinWindow(p, a.w.OncePer) {
					return nil, skipError(p, a.w.OncePer)
				}
				a.seen = p
				if a.w.NoWait || a.expired() {
					return nil, heldError(p)
				}
				a.notify(p)
				if err := a.sleep(ctx, jitter(a.e.cfg.PollInterval, 0.2)); err != nil {
					return nil, err
				}
				continue
			}
			free = p
		}
		// An optimistic acquire goes with a concurrent read; a follower's
		// acquire comes with the poll read that found the lease free.
		var pr *pendingRead
		if read {
			pr = readDone(free)
		} else {
			pr = a.startRead(ctx)
		}
		l, err := a.try(ctx, pr)
		if !read && errors.Is(err, errHeldNow) {
			// The read sent with the refused acquire is the first poll,
			// if it saw the lease held (else it raced a release: read again).
			if p := pr.wait(); p != nil && p.State.held() {
				next = p
			}
		}
		pr.abandon()
		read = true
		switch {
		case err == nil:
			return l, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, errHeldNow):
			a.succeeded()
			a.contended++
			if a.contended > 1 {
				// A read said free, the acquire said held: do not spin.
				if a.w.NoWait || a.expired() {
					return nil, heldError(a.seen)
				}
				if err := a.sleep(ctx, jitter(a.e.cfg.PollInterval, 0.2)); err != nil {
					return nil, err
				}
			}
		default:
			var se *StorageError
			if !errors.As(err, &se) {
				return nil, err // *SkipError
			}
			if err := a.failed(ctx, se); err != nil {
				return nil, err
			}
			read = false // retry the acquire
		}
	}
}

// pendingRead is a Get Blob Properties sent alongside an acquire, or a
// read already made.
type pendingRead struct {
	done   chan struct{} // closed when p is set
	p      *Properties   // nil if the read failed
	cancel context.CancelFunc
}

// startRead sends a read on its own goroutine, bounded like any request of
// the attempt.
func (a *attempt) startRead(ctx context.Context) *pendingRead {
	rctx, cancel := context.WithDeadline(ctx, a.requestDeadline())
	r := &pendingRead{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(r.done)
		r.p, _ = a.e.c.getProperties(rctx) // a failed read is simply not used
	}()
	return r
}

// readDone wraps a read already made (nil: none).
func readDone(p *Properties) *pendingRead {
	r := &pendingRead{done: make(chan struct{}), p: p, cancel: func() {}}
	close(r.done)
	return r
}

// wait returns the read, once it has answered; nil if it failed.
func (r *pendingRead) wait() *Properties {
	<-r.done
	return r.p
}

// waitUntil is wait, giving up at t (nil then).
func (r *pendingRead) waitUntil(t time.Time) *Properties {
	select {
	case <-r.done:
		return r.p
	default:
	}
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-r.done:
		return r.p
	case <-timer.C:
		return nil
	}
}

// abandon cancels the read if it is still in flight and waits for its
// goroutine to end. Safe more than once.
func (r *pendingRead) abandon() {
	r.cancel()
	<-r.done
}

// minReadGrace: how long past the acquire's answer try waits at least for
// the read sent with it (see reusable).
const minReadGrace = 100 * time.Millisecond

// try sends one acquire (creating the container and blob if missing) and,
// if it succeeds, claims the term: see claim. pr is a read made before or
// with the acquire, which the claim uses instead of a read of its own if
// the blob has not changed since; it is never nil.
func (a *attempt) try(ctx context.Context, pr *pendingRead) (*Lease, error) {
	c, cfg := a.e.c, a.e.cfg
	sent, ans, err := a.acquire(ctx)
	if se := asStorageError(err); se != nil && (se.kind == kindBlobMissing || se.kind == kindContainerMissing) {
		rctx, cancel := a.requestCtx(ctx)
		cerr := c.ensureBlob(rctx, se.kind == kindContainerMissing)
		cancel()
		if cerr != nil {
			return nil, cerr
		}
		sent, ans, err = a.acquire(ctx)
	}
	if se := asStorageError(err); se != nil {
		switch {
		case se.kind == kindTransient:
			a.unsure = true // the answer may have been lost
		case se.kind == kindBlobMissing || se.kind == kindContainerMissing:
			se.kind = kindTransient // deleted right after we created it
		case se.kind == kindHeld || se.StatusCode == http.StatusConflict || se.StatusCode == http.StatusPreconditionFailed:
			return nil, errHeldNow
		}
		return nil, se
	}
	a.unsure = true
	l := newLease(c, cfg, a.leaseID, sent, ans.Date)
	if err := a.claim(ctx, l, reusable(pr, ans, sent)); err != nil {
		a.releaseQuietly(ctx)
		return nil, err
	}
	a.unsure = false
	a.e.log.Debug("acquired lease", "url", c.url, "term", l.Term, "identity", cfg.Identity)
	return l, nil
}

// reusable returns pr's read if it shows the blob exactly as the acquire
// answered, ans: same ETag. A read still in flight is waited for as long
// again as the acquire took (at least minReadGrace), then left for a read
// of the claim's own. nil: not reusable.
func reusable(pr *pendingRead, ans answer, sent time.Time) *Properties {
	if ans.ETag == "" || ans.Date.IsZero() {
		return nil
	}
	p := pr.waitUntil(time.Now().Add(max(time.Since(sent), minReadGrace)))
	if p == nil || !p.Exists || p.etag != ans.ETag {
		return nil
	}
	return p
}

// claim checks once-per on the metadata of a just-acquired lease and writes
// holder and the new term, stored term + 1 (keeping every other key). Its
// requests end before the lease's stop deadline: a lease is never handed
// over with a term that was not written.
//
// The metadata comes from reused, when not nil: a read made before or
// together with the acquire whose ETag equals the one in the acquire's
// answer. Every write of a blob's metadata changes its ETag, so equal ETags
// mean that reused saw the metadata as it was when we acquired — whether
// the read happened before or after the acquire, and whether or not the
// service changes the ETag on acquire (if it does, only a read made after
// the acquire can match, and a poll read never does: the claim then reads
// again, slower but right). The write carries If-Match: that ETag with the
// lease ID, so it only lands on the version we read; a 412 ConditionNotMet
// (or no reusable read) falls back to reading the metadata after the
// acquire, as the only writer while we hold the lease. Either way the term
// written is the stored term as of our acquire, plus one.
//
// Service time for the claim (lastrunstart and the once-per decision) is
// the later of the read's Date and the acquire's: a reused poll read may be
// older than the acquire, and must not date the run.
func (a *attempt) claim(ctx context.Context, l *Lease, reused *Properties) error {
	c, cfg := a.e.c, a.e.cfg
	rctx, cancel := context.WithDeadline(ctx, minTime(time.Now().Add(requestTimeout), l.stopAt()))
	defer cancel()
	p, ifMatch := reused, ""
	if p != nil {
		ifMatch = p.etag
	}
	for {
		if p == nil {
			var err error
			if p, err = c.getProperties(rctx); err != nil {
				return err
			}
			if !p.Exists {
				return &StorageError{Op: "get properties", StatusCode: 404, Code: codeBlobNotFound, kind: kindTransient}
			}
		}
		now := maxTime(p.Date, l.AcquiredAt)
		at := *p
		at.Date = now
		if withinWindow(&at, a.w.OncePer) {
			return skipError(p, a.w.OncePer)
		}
		stored, err := parseTerm(p.Metadata[mdTerm])
		if err != nil {
			return &StorageError{Op: "read term", Err: err, kind: kindPermanent, summary: "refused",
				Hint: "fix or remove the blob's term metadata; leaderrun will not guess a fencing token"}
		}
		acquiredAt := l.AcquiredAt
		if acquiredAt.IsZero() {
			acquiredAt = p.Date
		}
		// The run's start goes in the same write (one request fewer per run
		// and per handover): the command starts right after the claim, and
		// a run skipped by --once-per returned above, before anything was
		// written.
		md := mergeMetadata(p.Metadata, map[string]string{
			mdHolder:        cfg.Identity,
			mdTerm:          strconv.FormatInt(stored+1, 10),
			mdLeaseDuration: strconv.Itoa(int(cfg.Duration / time.Second)),
			mdAcquiredAt:    formatTime(acquiredAt),
			mdVersion:       cfg.Version,
			mdLastRunHolder: cfg.Identity,
		})
		if !now.IsZero() {
			md[mdLastRunStart] = formatTime(now)
		}
		delete(md, mdLastRunEnd)
		delete(md, mdLastExit)
		date, err := c.setMetadata(rctx, l.ID, ifMatch, md)
		if se := asStorageError(err); se != nil && ifMatch != "" &&
			se.StatusCode == http.StatusPreconditionFailed && se.Code == codeConditionNotMet {
			a.e.log.Debug("the blob changed since it was read: reading it again")
			p, ifMatch = nil, ""
			continue
		}
		if err != nil {
			return err
		}
		l.Term, l.AcquiredAt, l.meta, l.runStartRecorded = stored+1, acquiredAt, md, !now.IsZero()
		l.sawDate(now)
		l.sawDate(date)
		return nil
	}
}

// releaseQuietly releases a lease this attempt will not hand over, from a
// fresh bounded context (ctx may be done). If it fails, cleanup tries again.
func (a *attempt) releaseQuietly(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	err := a.e.c.release(rctx, a.leaseID)
	if se := asStorageError(err); se == nil || se.leaseGone() {
		a.unsure = false
		return
	}
	a.e.log.Debug("release after a failed claim failed", "error", err)
}

// cleanup releases a lease that this attempt may hold unseen.
func (a *attempt) cleanup(ctx context.Context) {
	if a.unsure {
		a.releaseQuietly(ctx)
	}
}

// acquire sends one Acquire Lease, after OnTry; sent is when (t_ok if it
// succeeds).
func (a *attempt) acquire(ctx context.Context) (sent time.Time, ans answer, err error) {
	rctx, cancel := a.requestCtx(ctx)
	defer cancel()
	if a.w.OnTry != nil {
		a.w.OnTry()
	}
	sent = time.Now()
	ans, err = a.e.c.acquire(rctx, a.leaseID, a.e.cfg.Duration)
	return sent, ans, err
}

// requestCtx bounds one request (see requestDeadline) and records when it
// was sent.
func (a *attempt) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	a.reqStart = time.Now()
	return context.WithDeadline(ctx, a.requestDeadline())
}

// requestDeadline bounds a request sent now: requestTimeout, and the wait's
// deadline while it is ahead.
func (a *attempt) requestDeadline() time.Time {
	now := time.Now()
	d := now.Add(requestTimeout)
	if !a.deadline.IsZero() && a.deadline.After(now) {
		d = minTime(d, a.deadline)
	}
	return d
}

// failed records a storage failure. It returns the error to give up with,
// or nil after sleeping a backoff.
func (a *attempt) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	se := asStorageError(err)
	if se == nil {
		return err
	}
	if !se.Transient() {
		return se
	}
	now := time.Now()
	if a.failSince.IsZero() {
		a.failSince = a.reqStart
	}
	a.failures++
	if a.expired() && a.seen != nil {
		return heldError(a.seen) // the wait is over; the last thing known is a holder
	}
	if now.Sub(a.failSince) >= giveUpAfter || a.expired() {
		return se
	}
	delay := backoff(a.failures)
	a.e.log.Warn("storage request failed, retrying", "error", se, "retry_in", delay)
	return a.sleep(ctx, delay)
}

func (a *attempt) succeeded() { a.failSince, a.failures = time.Time{}, 0 }

func (a *attempt) expired() bool { return !a.deadline.IsZero() && !time.Now().Before(a.deadline) }

// sleep waits d, or until the wait's deadline, or until ctx ends.
func (a *attempt) sleep(ctx context.Context, d time.Duration) error {
	if !a.deadline.IsZero() {
		d = min(d, time.Until(a.deadline))
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
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

func asStorageError(err error) *StorageError {
	var se *StorageError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

// backoff is 200 ms doubling to 2 s, ±20 % jitter; n counts from 1.
func backoff(n int) time.Duration {
	d := 200 * time.Millisecond
	for i := 1; i < n && d < 2*time.Second; i++ {
		d *= 2
	}
	return jitter(min(d, 2*time.Second), 0.2)
}

// jitter spreads d by ±frac.
func jitter(d time.Duration, frac float64) time.Duration {
	return time.Duration(float64(d) * (1 - frac + 2*frac*rand.Float64()))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
