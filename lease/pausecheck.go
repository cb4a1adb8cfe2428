package lease

// The pause of a lease, as requests: reading, writing and deleting its
// marker (NAME~pause: names.go), and a contender's check before
// each acquire: one read per acquire, never per poll of a held lease (with
// the trigger marker's beside it, in the same round trip: trigger.go). The
// optimistic acquire sends it along (no extra round trip) and, if paused,
// releases the lease it got without claiming a term; a follower whose poll
// found the lease free reads it first (a round trip more per handover).
//
// Limits: a contender that read "not paused" may still acquire and start
// COMMAND up to one round trip after a pause was written. One that may not
// read the marker (a SAS scoped to the lease blob: 403) warns once and does
// not honour pauses; unreachable storage is retried, then given up.

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// ReadPause reads the lease's pause marker (one request): its pause, nil if
// none, and the answer's service Date, by which Pause.Active tells whether
// it is in force. Failures are *StorageError; a done ctx returns ctx.Err().
func (b *Blob) ReadPause(ctx context.Context) (*Pause, time.Time, error) {
	m, err := b.pauseMarker()
	if err != nil {
		return nil, time.Time{}, err
	}
	props, err := m.Properties(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	if !props.Exists {
		return nil, props.Date, nil
	}
	return pauseOf(props.Metadata), props.Date, nil
}

// WritePause writes p as the pause marker, replacing any, and returns the
// answer's service Date. p's times must be the service's, never local. A
// reason metadata cannot carry is a *ConfigError, sent nowhere. Transient
// failures are retried within requestTimeout: the write replaces the whole
// marker, so sending it again after a lost answer writes the same pause.
func (b *Blob) WritePause(ctx context.Context, p Pause) (time.Time, error) {
	m, err := b.pauseMarker()
	if err != nil {
		return time.Time{}, err
	}
	md, err := p.Metadata()
	if err != nil {
		return time.Time{}, err
	}
	var date time.Time
	err = retryTransient(ctx, b.c.dice, requestTimeout, func(rctx context.Context) error {
		ans, err := m.api.putBlob(rctx, md)
		if se := asStorageError(err); se != nil && se.kind == kindContainerMissing && ctx.Err() == nil {
			// Create the container only: an empty marker blob would be an
			// open-ended pause if the write then failed.
			_, cerr := m.api.createContainer(rctx)
			if se := asStorageError(cerr); cerr != nil && (se == nil || se.kind != kindExists) {
				return cerr
			}
			ans, err = m.api.putBlob(rctx, md)
		} else if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		date = ans.Date
		return renamed(err, "write pause marker")
	})
	if err != nil {
		return time.Time{}, err
	}
	b.c.log.Debug("pause marker written", "url", m.url)
	return date, nil
}

// DeletePause deletes the lease's pause marker; existed is false if there
// was none. Transient failures are retried within requestTimeout; a marker
// found gone after a try whose answer was lost was deleted by that try.
func (b *Blob) DeletePause(ctx context.Context) (existed bool, err error) {
	m, err := b.pauseMarker()
	if err != nil {
		return false, err
	}
	unanswered := false
	err = retryTransient(ctx, b.c.dice, requestTimeout, func(rctx context.Context) error {
		_, err := m.api.deleteBlob(rctx)
		se := asStorageError(renamed(err, "delete pause marker"))
		switch {
		case err == nil:
			existed = true
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case se == nil:
			return err
		case se.kind == kindBlobMissing || se.kind == kindContainerMissing:
			existed = unanswered
			return nil
		case se.Transient():
			unanswered = true
		}
		return se
	})
	return existed, err
}

func (b *Blob) pauseMarker() (*Blob, error) {
	if b.marker == nil {
		return nil, configErr("lease name", "this client has no lease, so no pause marker")
	}
	return b.marker, nil
}

// pauseText is a contender's reason not to acquire ("paused: …"; nil: "").
func pauseText(p *Pause) string {
	if p == nil {
		return ""
	}
	reason := p.Reason
	if reason == "" {
		reason = "no reason given"
	}
	if p.Until.IsZero() {
		return "paused: " + reason + " (until leaderrun resume)"
	}
	return fmt.Sprintf("paused: %s (until %s)", reason, p.Until.UTC().Format(time.RFC3339))
}

// readMarkers reads the pause marker (while the blob's read sent along with
// an optimistic acquire is in flight) and, for a line that takes triggers,
// the trigger marker beside it (trigger.go: into a.trigger), both in one
// round trip: pauseText if paused at the read's Date, or a failure of the
// pause's read; one that may not read it (401, 403) reads as not paused,
// warned once per Acquire. A blob with no marker (fakes) is not paused.
func (a *attempt) readMarkers(ctx context.Context) (string, error) {
	if a.b.marker == nil {
		return "", nil
	}
	rctx, cancel := context.WithDeadline(ctx, a.requestDeadline())
	defer cancel()
	var triggerRead sync.WaitGroup
	if a.takesTriggers() {
		triggerRead.Go(func() { a.readTrigger(rctx) })
	}
	props, err := a.b.marker.getProperties(rctx)
	triggerRead.Wait()
	switch {
	case denied(err):
		if !a.pauseRefused {
			a.pauseRefused = true
			a.e.log.Warn("cannot read the lease's pause marker: pauses are not honoured", "error", err)
		}
		return "", nil
	case err != nil || !props.Exists:
		return "", err
	}
	if p := pauseOf(props.Metadata); p.Active(props.Date) {
		return pauseText(p), nil
	}
	return "", nil
}

// paused records the marker read's answer (heldBack): paused?
func (a *attempt) paused(reason string) bool {
	if reason == "" && a.pauseReason != "" {
		a.e.log.Debug("the pause is over")
	}
	return a.heldBack(&a.pauseReason, reason)
}
