package lease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// switchHold is a WaitOptions.Hold whose answer a test changes; it counts
// the questions.
type switchHold struct {
	mu     sync.Mutex
	reason string
	asked  int
}

func (h *switchHold) set(r string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reason = r
}

func (h *switchHold) asks() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.asked
}

func (h *switchHold) hold() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked++
	return h.reason
}

func TestHoldNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.setAllow(opGetProps) // no acquire may be sent
		h := &switchHold{reason: "scheduled event Freeze e1 for this VM"}
		onHold := 0
		t0 := time.Now()
		_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{
			NoWait: true, Hold: h.hold, OnHold: func(string) { onHold++ },
		})
		var he *HeldError
		if !errors.As(err, &he) || !errors.Is(err, ErrHeld) {
			t.Fatalf("err = %v, want *HeldError", err)
		}
		if he.Reason != h.reason {
			t.Errorf("Reason = %q, want %q", he.Reason, h.reason)
		}
		if got, want := err.Error(), "lease: not acquired: "+h.reason; got != want {
			t.Errorf("message %q, want %q", got, want)
		}
		if n := s.count(opAcquire); n != 0 {
			t.Errorf("acquires = %d, want 0", n)
		}
		if time.Since(t0) != 0 || onHold != 0 {
			t.Errorf("took %v, OnHold called %d times; want at once, none", time.Since(t0), onHold)
		}
	})
}

func TestHoldWaitingPollsWithReadsThenAcquires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t) // the lease is free all along
		s.setAllow(opAcquire, opGetProps, opSetMeta, opRelease)
		h := &switchHold{reason: "event A"}
		var reasons []string
		done := make(chan error, 1)
		var l *Lease
		go func() {
			var err error
			l, err = newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{
				Hold: h.hold, OnHold: func(r string) { reasons = append(reasons, r) },
			})
			done <- err
		}()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		h.set("event B")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := s.count(opAcquire); n != 0 {
			t.Fatalf("acquires while held off = %d, want 0", n)
		}
		// One read per poll (2 s ± 20 %) over 20 s.
		if n := s.count(opGetProps); n < 7 || n > 13 {
			t.Errorf("reads in 20 s = %d, want 7..13", n)
		}
		if s.count(opSetMeta) != 0 || s.count(opRelease) != 0 {
			t.Errorf("writes while held off: %d metadata, %d releases", s.count(opSetMeta), s.count(opRelease))
		}
		cleared := time.Now()
		h.set("")
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(cleared); d > 2400*time.Millisecond {
			t.Errorf("acquired %v after the hold cleared, want within one poll interval", d)
		}
		if n := s.count(opAcquire); n != 1 {
			t.Errorf("acquires = %d, want 1", n)
		}
		if len(reasons) != 2 || reasons[0] != "event A" || reasons[1] != "event B" {
			t.Errorf("OnHold calls %q, want one per distinct reason: event A, event B", reasons)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHoldWaitsForHolderToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.holdBy("other", time.Hour, map[string]string{"holder": "vm-3", "term": "7"})
		s.setAllow(opAcquire, opGetProps, opSetMeta, opRelease)
		h := &switchHold{}
		done := make(chan error, 1)
		var l *Lease
		go func() {
			var err error
			l, err = newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{Hold: h.hold})
			done <- err
		}()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		// Held by vm-3: Hold is asked only before the optimistic acquire.
		if h.asks() != 1 || s.count(opAcquire) != 1 {
			t.Errorf("Hold asked %d times, %d acquires; want 1, 1", h.asks(), s.count(opAcquire))
		}
		h.set("event")
		s.releaseBy()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := s.count(opAcquire); n != 1 {
			t.Errorf("acquires on a free lease while held off = %d, want still 1", n)
		}
		h.set("")
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if l.Term != 8 {
			t.Errorf("term = %d, want 8", l.Term)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHoldTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.setAllow(opGetProps)
		h := &switchHold{reason: "event"}
		onHold := 0
		t0 := time.Now()
		_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{
			Timeout: 7 * time.Second, Hold: h.hold, OnHold: func(string) { onHold++ },
		})
		var he *HeldError
		if !errors.As(err, &he) || he.Reason != "event" {
			t.Fatalf("err = %v, want *HeldError with the reason", err)
		}
		if d := time.Since(t0); d != 7*time.Second {
			t.Errorf("gave up after %v, want 7s", d)
		}
		if s.count(opAcquire) != 0 || onHold != 1 {
			t.Errorf("%d acquires, OnHold called %d times; want 0, 1", s.count(opAcquire), onHold)
		}
	})
}

func TestHoldRetryAfterFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		h := &switchHold{}
		// The first acquire fails (5xx); the hold starts before the retry.
		var once sync.Once
		s.setHook(func(ctx context.Context, op string) error {
			var err error
			if op == opAcquire {
				once.Do(func() {
					h.set("event")
					err = respErr(503, "ServerBusy")
				})
			}
			return err
		})
		_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{Timeout: 5 * time.Second, Hold: h.hold})
		var he *HeldError
		if !errors.As(err, &he) || he.Reason != "event" {
			t.Fatalf("err = %v, want *HeldError with the reason", err)
		}
		if n := s.count(opAcquire); n != 1 {
			t.Errorf("acquires = %d, want only the first (the retry is held off)", n)
		}
	})
}
