package sim

// operator.go: a person at a terminal: leaderrun break, pause, drain,
// resume and trigger, each retried until it succeeds, as a person whose
// command failed runs it again.

import (
	"context"
	"errors"
	"time"

	"github.com/leaderrun/leaderrun/lease"
)

type operator struct {
	w    *world
	blob *lease.Blob
}

func (w *world) operator() *operator {
	blob, err := lease.NewLeaseBlob(lease.ClientConfig{
		Container: container, Blob: leaseName, ConnectionString: connString,
		Transport: w.svc.Transport("operator"), Rand: stream(w.plan.Seed, "operator"),
	})
	if err != nil {
		w.violate("operator: %v", err)
	}
	return &operator{w: w, blob: blob}
}

// act carries e out, trying again every few seconds until it succeeds.
func (op *operator) act(e Event) {
	w := op.w
	for try := 1; ; try++ {
		err := op.try(e)
		if err == nil {
			w.tracef("operator: %s done", e.Kind)
			return
		}
		w.tracef("operator: %s failed (try %d): %v", e.Kind, try, err)
		if !w.sleepUntil(w.since() + 3*time.Second) {
			return
		}
	}
}

func (op *operator) try(e Event) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch e.Kind {
	case EvBreak:
		return op.breakAll(ctx)
	case EvResume:
		_, err := op.blob.DeletePause(ctx)
		return err
	case EvTrigger:
		t, joined, err := op.blob.RequestRun(ctx, "operator", "sim")
		var nt *lease.NotTriggerableError
		if errors.As(err, &nt) {
			op.w.tracef("operator: trigger refused, not tried again: %v", err) // exit 64: a person gives up
			return nil
		}
		if err == nil {
			op.w.tracef("operator: trigger %s at %s (joined: %v)", op.w.label(t.Nonce), t.At.Format(time.RFC3339), joined)
		}
		return err
	case EvPause, EvDrain:
		_, date, err := op.blob.ReadPause(ctx)
		if err != nil {
			return err
		}
		p := lease.Pause{Reason: "sim", Since: date}
		if e.Dur > 0 {
			p.Until = date.Add(e.Dur)
		}
		if _, err := op.blob.WritePause(ctx, p); err != nil {
			return err
		}
		if e.Kind == EvDrain {
			return op.breakAll(ctx)
		}
	}
	return nil
}

// breakAll is leaderrun break without --now: every held slot, no period.
func (op *operator) breakAll(ctx context.Context) error {
	c := op.blob.Container()
	for i := range op.w.plan.Slots {
		b, err := c.Blob(lease.SlotBlob(leaseName, i))
		if err != nil {
			return err
		}
		if _, err := b.BreakLease(ctx, lease.BreakAtPeriodEnd); err != nil && !errors.Is(err, lease.ErrNotLeased) {
			var se *lease.StorageError
			if errors.As(err, &se) && se.StatusCode == 404 {
				continue // a slot never used
			}
			return err
		}
	}
	return nil
}
