package lease

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
)

// opTriggerProps is a read of the trigger marker, as recordingAPI records it.
const opTriggerProps = "trigger-" + opGetProps

type triggerRecorder struct {
	blobAPI
	r *recordingAPI
}

func (m triggerRecorder) getProperties(ctx context.Context) (blobProps, error) {
	defer m.r.enter(opTriggerProps)()
	return m.blobAPI.getProperties(ctx)
}

// oncePerRun makes the lease blob with one run of a --once-per line inside
// its window, recorded as ended.
func oncePerRun(t *testing.T, c *Blob) {
	t.Helper()
	l, err := azuriteElector(t, c, "vm-a", nil).Acquire(t.Context(), WaitOptions{NoWait: true, OncePer: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RecordRunEnd(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A trigger whose claim's answer is lost runs once: the claimant finds its
// own claim, with the trigger it consumed; nobody runs it again. The
// trigger's own write, its answer lost, is sent again with the same nonce.
func TestAzuriteTriggerLostAnswers(t *testing.T) {
	cs := azuriteConnectionString(t)
	for _, tc := range []struct {
		name   string
		status int
		code   string
	}{
		{"500 OperationTimedOut", http.StatusInternalServerError, "OperationTimedOut"},
		{"no answer", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			proxy, pcs := faultproxy.Start(t, cs)
			cfg := ClientConfig{ConnectionString: pcs, Container: uniqueContainer(t), Blob: "report"}
			c := azuriteBlob(t, cfg)
			oncePerRun(t, c)

			proxy.Set(faultproxy.Mode{LoseAnswer: faultproxy.LoseAnswer{Op: faultproxy.OpCreateBlob, Path: "~trigger", Count: 1, Status: tc.status, Code: tc.code}})
			tr, joined, err := azuriteBlob(t, cfg).RequestRun(t.Context(), "alice@laptop", "rerun")
			if err != nil || joined {
				t.Fatalf("RequestRun with its answer lost: %v (joined %v)", err, joined)
			}
			if got, _, err := c.ReadTrigger(t.Context()); err != nil || got == nil || got.Nonce != tr.Nonce || got.By != "alice@laptop" || got.Reason != "rerun" {
				t.Fatalf("the marker: %+v, %v; want %+v", got, err, tr)
			}

			proxy.Set(faultproxy.Mode{LoseAnswer: faultproxy.LoseAnswer{Op: faultproxy.OpSetMetadata, Count: 1, Status: tc.status, Code: tc.code}})
			l, err := azuriteElector(t, azuriteBlob(t, cfg), "vm-b", nil).Acquire(t.Context(), WaitOptions{NoWait: true, OncePer: time.Hour})
			if err != nil {
				t.Fatalf("Acquire after a lost claim answer: %v, want our own claim to stand", err)
			}
			if got := proxy.Counts().Lost; got != 2 { // the trigger's and the claim's
				t.Fatalf("answers lost: %d, want 2", got)
			}
			proxy.Set(faultproxy.Mode{})
			if l.Term != 2 || l.Cause == nil || l.Cause.Trigger != TriggerManual || !l.Occurrence.Equal(tr.At) {
				t.Errorf("term %d cause %+v occurrence %s; want 2, manual, %s", l.Term, l.Cause, l.Occurrence, tr.At)
			}
			if err := l.RecordRunEnd(t.Context(), 0); err != nil {
				t.Fatal(err)
			}
			if err := l.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
			if nonce, term := mustProps(t, c).Triggered(); nonce != tr.Nonce || term != 2 {
				t.Errorf("consumed: %q by term %d, want %q by 2", nonce, term, tr.Nonce)
			}
			for _, id := range []string{"vm-c", "vm-d"} {
				_, err = azuriteElector(t, c, id, nil).Acquire(t.Context(), WaitOptions{NoWait: true, OncePer: time.Hour})
				if r, ok := skipReason(err); !ok || r != SkipOncePer {
					t.Errorf("%s after the triggered run: %v, want skipped (window)", id, err)
				}
			}
			if p := mustProps(t, c); p.Term != 2 {
				t.Errorf("term %d after the skips, want 2", p.Term)
			}
		})
	}
}

// Checking for a trigger costs a follower no request per poll of a held
// lease: it reads the markers once per acquire it would send. A line that
// would skip reads the trigger marker only when the lease is free.
func TestAzuriteTriggerReadsPerAcquireOnly(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "held"}
	ca, cb := azuriteBlob(t, cfg), azuriteBlob(t, cfg)
	l, err := azuriteElector(t, ca, "vm-a", nil).Acquire(ctx, WaitOptions{NoWait: true, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	rb := recording(cb)
	cb.trigger.api = triggerRecorder{blobAPI: cb.trigger.api, r: rb}
	_, err = azuriteElector(t, cb, "vm-b", func(c *Config) { c.PollInterval = 100 * time.Millisecond }).
		Acquire(ctx, WaitOptions{Timeout: time.Second, Once: true})
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire = %v, want ErrHeld", err)
	}
	ops, _, _ := rb.snapshot()
	if n := len(ops); n < 6 || slices.Contains(ops[4:], opPauseProps) || slices.Contains(ops[4:], opTriggerProps) {
		t.Errorf("a --once follower's requests: %v; want the optimistic acquire with its three reads, then polls of the lease only", ops)
	}

	// A scheduled line on the held lease with nothing due: one read.
	rb = recording(cb)
	cb.trigger.api = triggerRecorder{blobAPI: cb.trigger.api.(triggerRecorder).blobAPI, r: rb}
	never := fixedSchedule{occ: time.Now().Add(time.Hour)}
	_, err = azuriteElector(t, cb, "vm-b", nil).Acquire(ctx, WaitOptions{NoWait: true, ReadFirst: true, Schedule: never})
	if r, ok := skipReason(err); !ok || r != SkipNotDue {
		t.Fatalf("nothing due: %v", err)
	}
	if ops, _, _ := rb.snapshot(); !slices.Equal(ops, []string{opGetProps}) {
		t.Errorf("nothing due, held: %v; want the read alone", ops)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Free: the read, then the trigger marker's, and no acquire.
	rb = recording(cb)
	cb.trigger.api = triggerRecorder{blobAPI: cb.trigger.api.(triggerRecorder).blobAPI, r: rb}
	_, err = azuriteElector(t, cb, "vm-b", nil).Acquire(ctx, WaitOptions{NoWait: true, ReadFirst: true, Schedule: never})
	if r, ok := skipReason(err); !ok || r != SkipNotDue {
		t.Fatalf("nothing due: %v", err)
	}
	if ops, _, _ := rb.snapshot(); !slices.Equal(ops, []string{opGetProps, opTriggerProps}) {
		t.Errorf("nothing due, free: %v; want the read, then the trigger marker's", ops)
	}
}
