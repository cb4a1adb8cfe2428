// elector.go: the public face of acquiring: Elector, NewElector,
// WaitOptions and Acquire. The attempt behind Acquire is in acquire.go, the
// claim of the term after an acquire in claim.go.

package lease

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// Elector acquires the lease for one holder.
//
// It does not guarantee that only one holder acts at a time: it guarantees,
// with the keeper, that this holder learns of the loss (Lease.Lost) in time
// to stop its child before another holder can acquire. Fencing the child's
// writes needs the term (LEADERRUN_TERM).
type Elector struct {
	b   *Blob
	cfg Config
	log hclog.Logger
}

// NewElector checks cfg (a *ConfigError if it cannot be safe) and returns an
// Elector for the lease blob b (NewLeaseBlob).
func NewElector(b *Blob, cfg Config) (*Elector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Elector{b: b, cfg: cfg, log: cfg.Logger.Named("lease")}, nil
}

// Config returns the checked configuration, defaults filled in.
func (e *Elector) Config() Config { return e.cfg }

// WaitOptions says how Acquire waits.
type WaitOptions struct {
	NoWait  bool          // try once: held by someone else → *HeldError
	Timeout time.Duration // 0 waits for ever; on expiry → *HeldError
	// HeldIsEnough, with NoWait, ends the attempt at the first refused
	// acquire with a *HeldError that names no holder, without the read
	// that would name it: for a caller to whom "held" and "skipped by the
	// once-per window" end alike and nothing is shown (leaderrun's
	// --no-wait -E 0 -q), so that a losing contender costs the blob one
	// request.
	HeldIsEnough bool
	// ReadFirst makes the first step a read instead of an optimistic
	// acquire, for a contender that expects to come late (leaderrun
	// --splay): a run already started, or a holder, is then one request,
	// and a free lease costs one more round trip.
	ReadFirst bool
	// StorageTimeout is how long storage failures in a row (throttling,
	// 5xx, timeouts, network) are retried before Acquire gives up with the
	// last one, when Timeout is 0; with a Timeout, its deadline is the
	// budget instead. 0 means DefaultStorageTimeout.
	StorageTimeout time.Duration
	// OncePer skips (a *SkipError) when a run started less than OncePer ago
	// by the service's clock: found after acquiring (the lease is released
	// first), or, as a contender, on the current holder's run (even with
	// NoWait). 0 is off.
	OncePer time.Duration
	// Once skips (a *SkipError, Reason SkipOnce) when the lease records a
	// run that ended with status 0, by anyone: checked on every poll read
	// and again in the claim (the lease is released first). A failed run
	// does not count. Refused with more than one slot (once.go says why).
	Once bool
	// OncePerHost, if not empty, is this host's name: Acquire skips (a
	// *SkipError, Reason SkipOncePerHost) when the done marker
	// NAME~done/HOST exists, checked before the first acquire and again
	// once acquired (the lease is released first). Lease.MarkDone writes
	// it. See once.go.
	OncePerHost string
	// Schedule, if set, runs only the occurrence it says is due (see
	// schedule.go): asked on every poll read and again in the claim, on
	// the service's clock; a *SkipError (SkipNotDue, SkipStarted,
	// SkipMissed) when none is. The claim records the occurrence, and the
	// Lease carries it.
	Schedule Schedule
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
	// Hold, if set, is asked on Acquire's goroutine right before each
	// acquire that would be sent (the optimistic first one, a follower's
	// acquire after a read found the lease free, a retry after a failure;
	// not the second one right after creating a missing blob). A
	// non-empty answer is the reason not to acquire now: with NoWait,
	// Acquire returns a *HeldError with that Reason and sends nothing;
	// waiting, it keeps polling with reads (no writes) and acquires as
	// soon as Hold answers "" and the lease is free; Timeout still
	// applies. It must not block and must be cheap (no I/O): it is asked
	// at every poll that finds the lease free.
	Hold func() string
	// OnHold, if set, is called on Acquire's goroutine when a waiting
	// Acquire is first held off by Hold and whenever the reason changes
	// (not with NoWait, which returns at once). It must not block.
	OnHold func(reason string)
}

// Acquire acquires the lease, waiting for it as w says, and writes the new
// term to the blob's metadata. The returned Lease is held but not yet kept:
// call Keep before starting the child.
//
// Errors: *HeldError (ErrHeld) when not acquired with NoWait or by Timeout
// (its Reason set when Hold kept it off);
// *SkipError (ErrSkipped) for a once-per skip; *StorageError
// (ErrUnavailable) when the storage refuses (400, 401, 403, …: at once) or
// cannot be reached within its budget (network, 408, 429, 5xx: retried with
// capped exponential backoff and full jitter, for StorageTimeout or until
// Timeout); ctx.Err() when ctx ends (promptly, whatever is in flight).
//
// Followers poll with reads: after one optimistic acquire, a waiting
// follower reads the blob's properties every PollInterval (±20 %) and sends
// an acquire only when the lease is neither leased nor breaking.
//
// Requests: the optimistic acquire goes out alone, so that a contender that
// loses costs the blob two requests (the refused acquire, then one read to
// learn who holds it and since when) and a fleet starting in the same
// second does not triple its own load. A free lease costs three round
// trips (acquire; the blob's and the pause marker's reads together; the
// write of the new term); a follower's handover reuses the poll read that
// found the lease free (acquire, then the write). See claim for why
// reusing a read cannot make the term go wrong.
func (e *Elector) Acquire(ctx context.Context, w WaitOptions) (*Lease, error) {
	if w.Timeout < 0 {
		return nil, configErr("timeout", "%s: must not be negative", w.Timeout)
	}
	if w.OncePer < 0 {
		return nil, configErr("once-per window", "%s: must not be negative", w.OncePer)
	}
	if w.StorageTimeout < 0 {
		return nil, configErr("storage timeout", "%s: must not be negative", w.StorageTimeout)
	}
	if w.StorageTimeout == 0 {
		w.StorageTimeout = DefaultStorageTimeout
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if w.Once && e.cfg.Slots > 1 {
		return nil, errOnceWithSlots(e.cfg.Slots)
	}
	a := &attempt{e: e, b: e.b, w: w, leaseID: uuid.NewString(), nonce: uuid.NewString()}
	if w.Timeout > 0 {
		a.deadline = time.Now().Add(w.Timeout)
	}
	if err := a.doneBefore(ctx); err != nil {
		return nil, err // once.go: --once-per-host, this host is done
	}
	l, err := a.run(ctx)
	if err != nil {
		a.cleanup(ctx)
		return nil, err
	}
	return l, nil
}
