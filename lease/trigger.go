package lease

// trigger.go: the trigger marker (NAME~trigger: names.go) as requests.
// `leaderrun trigger` writes it (RequestRun) and may follow the run it asks
// for (FollowTrigger); a contender of a line that takes triggers
// (--schedule, --once-per, --once, one slot) reads it beside the pause
// marker, once per acquire (pausecheck.go), and when a read of a free lease
// would skip, never once per poll of a held lease. The claim that runs it
// consumes it by recording its nonce with the new term (claim.go): a claim
// whose answer was lost reads back as ours with the trigger it consumed,
// and a claim taken back gives the trigger back.
//
// Limits: a trigger waits while the lease is held or paused; a line with
// --slots N > 1 takes none; the marker stays after its run (consumed), and
// a new trigger replaces it.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// mode is the kind of line w makes (the claim records it): ModeSchedule,
// ModeOncePer, ModeOnce, or "" for the others.
func (w WaitOptions) mode() string {
	switch {
	case w.Schedule != nil:
		return ModeSchedule
	case w.OncePer > 0:
		return ModeOncePer
	case w.Once:
		return ModeOnce
	}
	return ""
}

// takesTriggers: this line runs a pending trigger (one slot only).
func (a *attempt) takesTriggers() bool {
	return a.w.mode() != "" && a.e.cfg.Slots == 1 && a.b.trigger != nil
}

// pendingTrigger is the trigger last read, if this line takes triggers and
// p (the lease blob as of the claim) does not record it as consumed.
func (a *attempt) pendingTrigger(p *Properties) *Trigger {
	if !a.takesTriggers() || !a.trigger.pendingIn(p) {
		return nil
	}
	return a.trigger
}

// readTrigger reads the trigger marker into a.trigger (ctx bounds the
// request). One that may not read it (401, 403) warns once per Acquire and
// reads as none; any other failure leaves a.trigger as it was: a trigger
// missed now is run by the next invocation.
func (a *attempt) readTrigger(ctx context.Context) {
	props, err := a.b.trigger.getProperties(ctx)
	switch {
	case denied(err):
		if !a.triggerRefused {
			a.triggerRefused = true
			a.e.log.Warn("cannot read the lease's trigger marker: triggers are not run", "error", err)
		}
		a.trigger = nil
	case err != nil:
		a.e.log.Debug("could not read the lease's trigger marker", "error", err)
	case !props.Exists:
		a.trigger = nil
	default:
		a.trigger = triggerOf(props.Metadata)
	}
}

// PendingTrigger is the lease's trigger if no claim consumed it yet: the
// next invocation of its line runs it. Nil if none.
func (v *View) PendingTrigger() *Trigger {
	if s := v.Slot(0); s.Props != nil && v.Trigger.pendingIn(s.Props) {
		return v.Trigger
	}
	return nil
}

// ReadTrigger reads the lease's trigger marker (one request): the trigger,
// nil if none, and the answer's service Date.
func (b *Blob) ReadTrigger(ctx context.Context) (*Trigger, time.Time, error) {
	if b.trigger == nil {
		return nil, time.Time{}, configErr("lease name", "this client has no lease, so no trigger marker")
	}
	props, err := b.trigger.Properties(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	if !props.Exists {
		return nil, props.Date, nil
	}
	return triggerOf(props.Metadata), props.Date, nil
}

// NotTriggerableError is RequestRun's refusal: no line of the lease would
// run a trigger.
type NotTriggerableError struct {
	Name string // the lease
	Why  string
}

func (e *NotTriggerableError) Error() string {
	return fmt.Sprintf("lease %q: nothing would run it: %s", e.Name, e.Why)
}

// RequestRun asks the next invocation of the lease's line, on any host, to
// run COMMAND once, now, whatever its schedule, --once-per window or
// --once say (a pause still holds it off): it writes the trigger marker,
// by and reason its requester and why (reason may be ""), dated by the
// service's clock. A trigger already pending is joined, not replaced
// (joined: true), so that two requests before a run make one run. A lease
// whose latest claim was not by a --schedule, --once-per or --once line of
// one slot (or a lease never used) is a *NotTriggerableError; by or a
// reason metadata cannot carry, a *ConfigError. Transient failures are
// retried within requestTimeout: the write replaces the whole marker with
// the same nonce, so sending it again after a lost answer writes the same
// trigger.
func (b *Blob) RequestRun(ctx context.Context, by, reason string) (t *Trigger, joined bool, err error) {
	if _, err := (Trigger{By: by, Reason: reason}).Metadata(); err != nil {
		return nil, false, err // before any request
	}
	// The marker first: a claim that consumed it is then in the read of
	// the lease blob that follows.
	old, date, err := b.ReadTrigger(ctx)
	if err != nil {
		return nil, false, err
	}
	p, err := b.Properties(ctx)
	if err != nil {
		return nil, false, err
	}
	if err := triggerable(b.name, p); err != nil {
		return nil, false, err
	}
	if old.pendingIn(p) {
		return old, true, nil
	}
	if date.IsZero() {
		return nil, false, &StorageError{Op: "read trigger marker", Err: errors.New("no Date header: a trigger is never dated by this host's clock"),
			kind: kindPermanent, summary: "no service time"}
	}
	t = &Trigger{By: by, At: date, Reason: reason, Nonce: uuid.NewString()}
	md, err := t.Metadata()
	if err != nil {
		return nil, false, err
	}
	err = retryTransient(ctx, b.c.dice, requestTimeout, func(rctx context.Context) error {
		_, err := b.trigger.api.putBlob(rctx, md)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		return renamed(err, "write trigger marker")
	})
	if err != nil {
		return nil, false, err
	}
	b.c.log.Debug("trigger marker written", "url", b.trigger.url, "nonce", t.Nonce)
	return t, false, nil
}

// triggerable refuses a lease none of whose lines would run a trigger.
func triggerable(name string, p *Properties) error {
	switch {
	case !p.Exists:
		return &NotTriggerableError{Name: name, Why: "the lease was never used"}
	case recordedSlots(p.Metadata) > 1:
		return &NotTriggerableError{Name: name, Why: fmt.Sprintf("its line uses --slots %d, and a trigger runs on one slot only", recordedSlots(p.Metadata))}
	case p.Mode != "", p.Schedule != "":
		return nil
	case p.Term == 0 && p.Metadata[mdTerm] == "":
		// Made, never claimed: every invocation so far skipped in its
		// claim, as a --schedule line does until its first occurrence
		// (any other line claims the blob it makes).
		return nil
	}
	return &NotTriggerableError{Name: name, Why: "its last run was not by a --schedule, --once-per or --once line"}
}

// ErrNotTaken: FollowTrigger's wait for a host to take the trigger ended first.
var ErrNotTaken = errors.New("lease: no host took the trigger in time")

// FollowTrigger waits, reading the lease blob every poll, for a host to
// take t (its claim consumes it) and for that run to end, and returns the
// run: ended with its exit status, or with its end unknown (Run.EndUnknown:
// its holder lost the lease or died). A host must take it by takeBy (zero:
// no limit), else ErrNotTaken; once taken, the run is followed to its end.
// A trigger that replaced t before any host took it is followed instead
// (one run answers both). taken, if set, is told once, of the taking term.
// Storage failures are retried for storageTimeout in a row, then returned.
func (b *Blob) FollowTrigger(ctx context.Context, t *Trigger, poll, storageTimeout time.Duration, takeBy time.Time, taken func(term int64, holder string)) (Run, error) {
	var failingSince time.Time
	fail := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *StorageError
		if !errors.As(err, &se) || !se.Transient() {
			return err
		}
		if failingSince.IsZero() {
			failingSince = time.Now()
		}
		if time.Since(failingSince) >= storageTimeout {
			return err
		}
		return nil
	}
	told := false
	for {
		p, err := b.Properties(ctx)
		if err != nil {
			if err := fail(err); err != nil {
				return Run{}, err
			}
		} else {
			failingSince = time.Time{}
			if nonce, term := p.Triggered(); nonce == t.Nonce {
				runs := ReadHistory(p.Metadata, p.State.Held())
				i := slices.IndexFunc(runs, func(r Run) bool { return r.Term == term })
				if i < 0 {
					return Run{}, fmt.Errorf("lease: the run of term %d, which took the trigger, is no longer in the lease's history", term)
				}
				r := runs[i]
				if !told && taken != nil {
					taken(term, r.Holder)
				}
				told = true
				if !r.Running {
					return r, nil
				}
			} else if !takeBy.IsZero() && !time.Now().Before(takeBy) {
				return Run{}, ErrNotTaken
			} else if cur, _, err := b.ReadTrigger(ctx); err == nil && cur != nil && cur.Nonce != t.Nonce && cur.pendingIn(p) {
				b.c.log.Debug("the trigger was replaced before any host took it: following the new one", "nonce", cur.Nonce)
				t = cur
			}
		}
		wait := poll
		if !takeBy.IsZero() && !told {
			wait = min(wait, max(time.Until(takeBy), 0))
		}
		if waitFor(ctx.Done(), cmp.Or(wait, time.Millisecond)) {
			return Run{}, ctx.Err()
		}
	}
}
