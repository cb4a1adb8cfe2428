package lease

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Default timings: d = 15 s, renew every 5 s, StopBudget = min(10 s, 5 s) =
// 5 s, so killAt = t_ok + 13.5 s and stopAt = t_ok + 8.5 s.
const (
	testStopAt = 8500 * time.Millisecond
	testKillAt = 13500 * time.Millisecond
)

func testConfig() Config {
	return Config{Duration: 15 * time.Second, KillGrace: 10 * time.Second, Identity: "me", Version: "test"}
}

// acquireLease acquires a free lease from s, at time.Now() (t_ok).
func acquireLease(t *testing.T, s *fakeStore, cfg Config) *Lease {
	t.Helper()
	e, err := NewElector(s.client(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := e.Acquire(context.Background(), WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// holding acquires a free lease at time.Now() (t0 = t_ok) and allows the
// keeper's calls: renewals and the release.
func holding(t *testing.T, cfg Config) (*fakeStore, *Lease, time.Time) {
	t.Helper()
	s := newFakeStore(t)
	t0 := time.Now()
	l := acquireLease(t, s, cfg)
	s.setAllow(opRenew, opRelease)
	return s, l, t0
}

// releaseNow lets requests through again and releases the lease.
func releaseNow(t *testing.T, s *fakeStore, l *Lease) {
	t.Helper()
	s.setHook(nil)
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func isLost(l *Lease) bool {
	select {
	case <-l.Lost():
		return true
	default:
		return false
	}
}

func wantTime(t *testing.T, what string, got, t0 time.Time, want time.Duration) {
	t.Helper()
	if d := got.Sub(t0); d != want {
		t.Errorf("%s = t0%+v, want t0%+v", what, d, want)
	}
}

func TestKeeperRenewCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, l, t0 := holding(t, testConfig())
		l.Keep(context.Background())

		time.Sleep(15*time.Second - time.Millisecond)
		synctest.Wait()
		if n := s.count(opRenew); n != 2 {
			t.Errorf("renewals before t0+15s = %d, want 2", n)
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if n := s.count(opRenew); n != 3 {
			t.Errorf("renewals by t0+15s = %d, want 3", n)
		}
		select {
		case <-l.RenewedAt():
		default:
			t.Error("RenewedAt got nothing")
		}
		stopAt, killAt := l.deadlines()
		wantTime(t, "stopAt", stopAt, t0, 15*time.Second+testStopAt)
		wantTime(t, "killAt", killAt, t0, 15*time.Second+testKillAt)

		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s.leaseState() != StateAvailable {
			t.Errorf("state after Release = %s", s.leaseState())
		}
		time.Sleep(time.Minute)
		if isLost(l) {
			t.Error("Lost closed after Release")
		}
		if n := s.count(opRenew); n != 3 {
			t.Errorf("renewals after Release: %d, want still 3", n)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Errorf("second Release: %v", err)
		}
	})
}

func TestKeeperRetriesWithinBudgetThenKeeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, l, t0 := holding(t, testConfig())
		var (
			mu    sync.Mutex
			fails = 3
			okAt  time.Time
		)
		s.setHook(func(ctx context.Context, op string) error {
			mu.Lock()
			defer mu.Unlock()
			if fails > 0 {
				fails--
				return respErr(http.StatusServiceUnavailable, "ServerBusy")
			}
			if okAt.IsZero() {
				okAt = time.Now()
			}
			return nil
		})
		l.Keep(context.Background())
		time.Sleep(testStopAt + time.Second)
		if isLost(l) {
			t.Fatalf("lost: %v", l.LostErr())
		}
		mu.Lock()
		sentOK := okAt
		mu.Unlock()
		if d := sentOK.Sub(t0); d <= 5*time.Second || d >= testStopAt {
			t.Fatalf("successful retry sent at t0%+v, want within (t0+5s, t0+8.5s)", d)
		}
		stopAt, _ := l.deadlines()
		if stopAt.Before(sentOK.Add(testStopAt)) {
			t.Errorf("t_ok did not move to the successful retry's send time")
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestKeeperAllRenewalsFailLostAtStopAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, l, t0 := holding(t, testConfig())
		s.setHook(func(ctx context.Context, op string) error {
			if op == opRenew {
				return respErr(http.StatusInternalServerError, "InternalError")
			}
			return nil
		})
		l.Keep(context.Background())
		<-l.Lost()
		wantTime(t, "Lost closed", time.Now(), t0, testStopAt)
		le := l.LostErr()
		wantTime(t, "StopAt", le.StopAt, t0, testStopAt)
		wantTime(t, "KillBy", le.KillBy, t0, testKillAt)
		if !errors.Is(le, ErrLost) || !errors.Is(le, ErrUnavailable) {
			t.Errorf("LostErr %v: want ErrLost wrapping the last StorageError", le)
		}
		if le.Cause != LostRenewals || le.Last == nil || le.Last.Answer() != "500 InternalError" || le.Unrenewed != testStopAt {
			t.Errorf("LostErr cause %v, last %v, unrenewed %v; want renewals failed for %v, last 500 InternalError",
				le.Cause, le.Last, le.Unrenewed, testStopAt)
		}
		if n := s.count(opRenew); n < 3 {
			t.Errorf("renew attempts = %d, want retries", n)
		}
		// The lease is still ours at the service: Release frees it.
		releaseNow(t, s, l)
		if s.leaseState() != StateAvailable {
			t.Errorf("state after Release = %s", s.leaseState())
		}
	})
}

// A network that swallows every request (a silent packet drop) must still
// leave room for several tries before the stop deadline.
func TestKeeperAllRequestsHangSeveralTries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, l, t0 := holding(t, testConfig())
		s.setHook(func(ctx context.Context, op string) error {
			if op == opRenew {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
		l.Keep(context.Background())
		<-l.Lost()
		wantTime(t, "Lost closed", time.Now(), t0, testStopAt)
		if n := s.count(opRenew); n < 3 {
			t.Errorf("renew attempts in the 3.5 s window = %d, want at least 3", n)
		}
		if le := l.LostErr(); le.Cause != LostRenewals || le.Last == nil || !strings.HasPrefix(le.Last.Answer(), "storage unreachable: ") {
			t.Errorf("LostErr cause %v, last %v: want renewals failed, unanswered", le.Cause, le.Last)
		}
		releaseNow(t, s, l)
	})
}

func TestKeeperLeaseGoneLostAtOnce(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
		cause  LostCause
	}{
		{http.StatusConflict, "LeaseIsBrokenAndCannotBeRenewed", LostBroken},
		{http.StatusConflict, "LeaseIdMismatchWithLeaseOperation", LostTaken},
		{http.StatusConflict, "LeaseNotPresentWithLeaseOperation", LostGone},
		{http.StatusPreconditionFailed, "LeaseLost", LostGone},
		{http.StatusNotFound, "BlobNotFound", LostDeleted},
		{http.StatusNotFound, "ContainerNotFound", LostDeleted},
	} {
		t.Run(tc.code, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, l, t0 := holding(t, testConfig())
				s.setHook(func(ctx context.Context, op string) error {
					if op == opRenew {
						return respErr(tc.status, tc.code)
					}
					return nil
				})
				l.Keep(context.Background())
				<-l.Lost()
				wantTime(t, "Lost closed", time.Now(), t0, 5*time.Second)
				le := l.LostErr()
				wantTime(t, "StopAt", le.StopAt, t0, 5*time.Second)
				wantTime(t, "KillBy", le.KillBy, t0, 10*time.Second) // min(killAt, now+StopBudget)
				var se *StorageError
				if !errors.As(le, &se) || se.Code != tc.code {
					t.Errorf("LostErr %v: want the service's code %s", le, tc.code)
				}
				if le.Cause != tc.cause || le.Last != se || le.Unrenewed != 5*time.Second {
					t.Errorf("LostErr cause %v, last %v, unrenewed %v; want %v, the answer, 5s", le.Cause, le.Last, le.Unrenewed, tc.cause)
				}
				if n := s.count(opRenew); n != 1 {
					t.Errorf("renew attempts = %d, want 1 (no retry once gone)", n)
				}
				releaseNow(t, s, l)
			})
		})
	}
}

func TestReleaseAfterLostLeaseGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		l := acquireLease(t, s, testConfig())
		s.setAllow(opRenew, opRelease)
		s.mu.Lock()
		s.blobExists = false // deleted under us
		s.mu.Unlock()
		l.Keep(context.Background())
		<-l.Lost()
		if err := l.Release(context.Background()); err != nil {
			t.Fatalf("Release after the blob vanished: %v, want nil", err)
		}
		if n := s.count(opRelease); n != 1 {
			t.Errorf("release calls = %d, want 1", n)
		}
	})
}

func TestKeeperHungRequestCutByDeadline(t *testing.T) {
	t.Run("cut and retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, l, t0 := holding(t, testConfig())
			var (
				mu        sync.Mutex
				deadlines []time.Time
			)
			s.setHook(func(ctx context.Context, op string) error {
				d, _ := ctx.Deadline()
				mu.Lock()
				deadlines = append(deadlines, d)
				first := len(deadlines) == 1
				mu.Unlock()
				if first {
					<-ctx.Done() // a black-holed server
					return ctx.Err()
				}
				return nil
			})
			l.Keep(context.Background())
			time.Sleep(14 * time.Second)
			if isLost(l) {
				t.Fatalf("lost: %v", l.LostErr())
			}
			mu.Lock()
			got := append([]time.Time(nil), deadlines...)
			mu.Unlock()
			if len(got) < 2 {
				t.Fatalf("renew calls = %d, want a retry after the cut", len(got))
			}
			// A third of the 3.5 s between the scheduled renewal and stopAt.
			wantTime(t, "hung request's deadline", got[0], t0, 5*time.Second+3500*time.Millisecond/3)
			// The retry goes out after a short backoff, with the same bound.
			if d := got[1].Sub(got[0]); d <= time.Second || d > 2*time.Second {
				t.Fatalf("retry's deadline %s after the first's, want a backoff plus 1.17 s", d)
			}
			releaseNow(t, s, l)
		})
	})
	t.Run("deadline never past stopAt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newFakeStore(t)
			cfg := testConfig()
			cfg.RenewInterval = 7 * time.Second // 1.5 s before stopAt
			t0 := time.Now()
			l := acquireLease(t, s, cfg)
			s.setAllow(opRenew, opRelease)
			var (
				mu        sync.Mutex
				deadlines []time.Time
			)
			s.setHook(func(ctx context.Context, op string) error {
				d, _ := ctx.Deadline()
				mu.Lock()
				deadlines = append(deadlines, d)
				mu.Unlock()
				<-ctx.Done()
				return ctx.Err()
			})
			l.Keep(context.Background())
			<-l.Lost()
			wantTime(t, "Lost closed", time.Now(), t0, testStopAt)
			mu.Lock()
			// The first try, sent at t0+7s, gets the 1 s minimum; the retry
			// would get 1 s too but is cut at stopAt.
			wantTime(t, "first request's deadline", deadlines[0], t0, 8*time.Second)
			last := deadlines[len(deadlines)-1]
			wantTime(t, "last request's deadline", last, t0, testStopAt)
			for _, d := range deadlines {
				if d.Sub(t0) > testStopAt {
					t.Errorf("a request's deadline t0%+v is past stopAt", d.Sub(t0))
				}
			}
			mu.Unlock()
			wantTime(t, "KillBy", l.LostErr().KillBy, t0, testKillAt)
			releaseNow(t, s, l)
		})
	})
}

func TestKeeperLateAnswerCountsFromSendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, l, t0 := holding(t, testConfig())
		var (
			mu sync.Mutex
			n  int
		)
		s.setHook(func(ctx context.Context, op string) error {
			mu.Lock()
			n++
			first := n == 1
			mu.Unlock()
			if first {
				time.Sleep(1100 * time.Millisecond) // answered just before its 1.17 s deadline
				return nil
			}
			return respErr(http.StatusServiceUnavailable, "ServerBusy")
		})
		l.Keep(context.Background())
		<-l.Lost()
		// The renewal sent at t0+5s counts from t0+5s, not from its answer at t0+6.1s.
		wantTime(t, "Lost closed", time.Now(), t0, 5*time.Second+testStopAt)
		wantTime(t, "KillBy", l.LostErr().KillBy, t0, 5*time.Second+testKillAt)
		releaseNow(t, s, l)
	})
}

func TestKeeperFrozenPastKillAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, l, t0 := holding(t, testConfig())
		s.setHook(func(ctx context.Context, op string) error {
			if op == opRenew {
				time.Sleep(20 * time.Second) // the process was frozen mid-request
				return respErr(http.StatusServiceUnavailable, "ServerBusy")
			}
			return nil
		})
		l.Keep(context.Background())
		<-l.Lost()
		le := l.LostErr()
		wantTime(t, "StopAt", le.StopAt, t0, 25*time.Second)
		wantTime(t, "KillBy", le.KillBy, t0, 25*time.Second)
		releaseNow(t, s, l)
	})
}

func TestKeeperContextEndLoses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, l, t0 := holding(t, testConfig())
		ctx, cancel := context.WithCancel(context.Background())
		l.Keep(ctx)
		time.Sleep(2 * time.Second)
		cancel()
		<-l.Lost()
		le := l.LostErr()
		wantTime(t, "StopAt", le.StopAt, t0, 2*time.Second)
		wantTime(t, "KillBy", le.KillBy, t0, 7*time.Second)
		if !errors.Is(le, context.Canceled) || le.Cause != LostStopped {
			t.Errorf("LostErr %v (cause %v): want context.Canceled, LostStopped", le, le.Cause)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestKeeperLostIsFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		l := acquireLease(t, s, testConfig())
		s.setAllow(opRenew, opRelease)
		l.lose(time.Now(), time.Now(), &LostError{Reason: errors.New("first")})
		l.lose(time.Now(), time.Now(), &LostError{Reason: errors.New("second")})
		if got := l.LostErr().Reason.Error(); got != "first" {
			t.Errorf("Reason = %q, want the first", got)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// A keeper that first runs past the kill deadline (the process frozen
// before any renewal was due) loses with no renewal tried: LostUnrenewed.
func TestKeeperWokenPastKillAtUnrenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, l, t0 := holding(t, testConfig())
		time.Sleep(20 * time.Second) // frozen: nothing ran, not even the keeper
		l.Keep(context.Background())
		<-l.Lost()
		le := l.LostErr()
		if le.Cause != LostUnrenewed || le.Last != nil || le.Unrenewed != 20*time.Second {
			t.Errorf("LostErr %v: cause %v, last %v, unrenewed %v; want LostUnrenewed, none, 20s", le, le.Cause, le.Last, le.Unrenewed)
		}
		wantTime(t, "KillBy", le.KillBy, t0, 20*time.Second)
		if n := s.count(opRenew); n != 0 {
			t.Errorf("renew attempts = %d, want none", n)
		}
		releaseNow(t, s, l)
	})
}
