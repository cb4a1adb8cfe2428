package lease

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Against the emulator: a pause keeps contenders off (NoWait gets the
// reason, nothing is claimed), a waiting contender holds off with reads
// only, and acquires once a pause with an end has run out by the service's
// clock; resume deletes the marker.
func TestAzuritePause(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "jobs/paused"}
	c := azuriteBlob(t, cfg)
	e := azuriteElector(t, c, "vm-a", func(c *Config) { c.PollInterval = 200 * time.Millisecond })

	if p, _, err := c.ReadPause(ctx); err != nil || p != nil {
		t.Fatalf("ReadPause before any pause = %v, %v; want nil, nil", p, err)
	}
	// An open-ended pause, written before the container exists.
	if _, err := c.WritePause(ctx, Pause{Reason: "db maintenance"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Acquire(ctx, WaitOptions{NoWait: true})
	var he *HeldError
	if !errors.As(err, &he) || !strings.HasPrefix(he.Reason, "paused: db maintenance") {
		t.Fatalf("NoWait while paused: %v, want a *HeldError with the pause's reason", err)
	}
	if p := mustProps(t, c); p.Term != 0 || p.State.Held() {
		t.Errorf("after a paused NoWait: term %d, state %s; want nothing claimed, the lease given back", p.Term, p.State)
	}

	// A pause of 2 s by the service's clock replaces it.
	_, date, err := c.ReadPause(ctx)
	if err != nil {
		t.Fatal(err)
	}
	until := date.Add(2 * time.Second)
	if _, err := c.WritePause(ctx, Pause{Reason: "short", Since: date, Until: until}); err != nil {
		t.Fatal(err)
	}
	p, _, err := c.ReadPause(ctx)
	if err != nil || p == nil || p.Reason != "short" || !p.Until.Equal(until) {
		t.Fatalf("ReadPause = %+v, %v; want the short pause", p, err)
	}
	rec := recording(c)
	var (
		mu      sync.Mutex
		reasons []string
	)
	l, err := e.Acquire(ctx, WaitOptions{Timeout: 20 * time.Second, OnHold: func(r string) {
		mu.Lock()
		reasons = append(reasons, r)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatalf("waiting through a 2s pause: %v", err)
	}
	if l.AcquiredAt.Before(until) {
		t.Errorf("acquired at %s, before the pause's end %s", l.AcquiredAt, until)
	}
	mu.Lock()
	if len(reasons) != 1 || !strings.HasPrefix(reasons[0], "paused: short (until ") {
		t.Errorf("OnHold got %q, want one call with the pause's reason", reasons)
	}
	mu.Unlock()
	ops, _, _ := rec.snapshot()
	if n := slices.Index(ops, opSetMeta); n < 0 || slices.Contains(ops[:n], opSetMeta) {
		t.Errorf("requests while paused: %v; want reads and acquires that were given back, then one claim", ops)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	if existed, err := c.DeletePause(ctx); err != nil || !existed {
		t.Errorf("DeletePause = %v, %v; want true", existed, err)
	}
	if existed, err := c.DeletePause(ctx); err != nil || existed {
		t.Errorf("DeletePause again = %v, %v; want false", existed, err)
	}
}

// A follower that waits for a held lease reads only the lease blob while
// it is held, and the pause marker once per acquire it would send.
func TestAzuritePauseReadsPerAcquireOnly(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "held"}
	ca, cb := azuriteBlob(t, cfg), azuriteBlob(t, cfg)
	l, err := azuriteElector(t, ca, "vm-a", nil).Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	rb := recording(cb)
	_, err = azuriteElector(t, cb, "vm-b", func(c *Config) { c.PollInterval = 100 * time.Millisecond }).
		Acquire(ctx, WaitOptions{Timeout: time.Second})
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire = %v, want ErrHeld", err)
	}
	ops, _, _ := rb.snapshot()
	if n := len(ops); n < 5 || slices.Contains(ops[3:], opPauseProps) {
		t.Errorf("follower's requests: %v; want the optimistic acquire with its two reads, then polls of the lease only", ops)
	}
}
