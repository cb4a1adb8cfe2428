package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestRetryTransient(t *testing.T) {
	transient := &StorageError{Op: "op", StatusCode: 503, kind: kindTransient}
	refused := &StorageError{Op: "op", StatusCode: 403, kind: kindPermanent}
	other := errors.New("not a storage error")
	for _, tc := range []struct {
		name    string
		answers []error // what the tries return in turn; the last one repeats
		bound   time.Duration
		want    error
		tries   int
		// the time taken: the backoffs of 200, 400, 800 ms, ±20 %
		minTime, maxTime time.Duration
	}{
		{"success at once", []error{nil}, time.Minute, nil, 1, 0, 0},
		{"two transient failures, then success", []error{transient, transient, nil}, time.Minute, nil, 3,
			480 * time.Millisecond, 720 * time.Millisecond},
		{"a refusal is not retried", []error{transient, refused}, time.Minute, refused, 2,
			160 * time.Millisecond, 240 * time.Millisecond},
		{"an error of another kind is not retried", []error{other}, time.Minute, other, 1, 0, 0},
		{"transient until the bound", []error{transient}, time.Second, transient, 3,
			time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tries := 0
				t0 := time.Now()
				err := retryTransient(context.Background(), nil, tc.bound, func(context.Context) error {
					tries++
					return tc.answers[min(tries, len(tc.answers))-1]
				})
				d := time.Since(t0)
				if err != tc.want {
					t.Errorf("err = %v, want %v", err, tc.want)
				}
				if tries != tc.tries {
					t.Errorf("tries = %d, want %d", tries, tc.tries)
				}
				if d < tc.minTime || d > tc.maxTime {
					t.Errorf("took %v, want %v to %v", d, tc.minTime, tc.maxTime)
				}
			})
		})
	}
}

func TestWaitFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		open, closed := make(chan struct{}), make(chan struct{})
		close(closed)
		t0 := time.Now()
		if waitFor(open, time.Second) || time.Since(t0) != time.Second {
			t.Errorf("open channel: closed or woke after %v, want the full second", time.Since(t0))
		}
		if !waitFor(closed, 0) || !waitFor(closed, -time.Second) {
			t.Error("a closed channel must win over a wait already over")
		}
		t0 = time.Now()
		closing := make(chan struct{})
		time.AfterFunc(300*time.Millisecond, func() { close(closing) })
		if !waitFor(closing, time.Hour) || time.Since(t0) != 300*time.Millisecond {
			t.Errorf("closing channel: woke after %v, want 300ms and closed", time.Since(t0))
		}
	})
}

// The metadata write and the release retry transient failures (with the
// same backoff) and give up at once on a refusal.
func TestRunRecordAndReleaseRetry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fail   error // answer to the first two tries
		tries  int
		wantOK bool
	}{
		{"503 twice, then done", respErr(http.StatusServiceUnavailable, "ServerBusy"), 3, true},
		{"403 at once", respErr(http.StatusForbidden, "AuthorizationPermissionMismatch"), 1, false},
	} {
		for _, op := range []string{opSetMeta, opRelease} {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s := newFakeStore(t)
					l := acquireLease(t, s, testConfig())
					s.setAllow(opSetMeta, opRelease)
					before, failed := s.count(op), 0
					s.setHook(func(ctx context.Context, o string) error {
						if o == op && failed < 2 {
							failed++
							return tc.fail
						}
						return nil
					})
					var err error
					if op == opSetMeta {
						err = l.RecordRunEnd(context.Background(), 0)
					} else {
						err = l.Release(context.Background())
					}
					if (err == nil) != tc.wantOK {
						t.Errorf("err = %v, want success %v", err, tc.wantOK)
					}
					if n := s.count(op) - before; n != tc.tries {
						t.Errorf("%s calls = %d, want %d", op, n, tc.tries)
					}
					if !tc.wantOK && !errors.Is(err, ErrUnavailable) {
						t.Errorf("err = %v, want a *StorageError", err)
					}
					s.setHook(nil)
					if err := l.Release(context.Background()); err != nil && op == opSetMeta {
						t.Fatal(err)
					}
				})
			})
		}
	}
}

// TestDice: the slots are tried in random order, and a seeded source
// (Config.Rand) repeats every draw.
func TestDice(t *testing.T) {
	orders := map[string]bool{}
	for range 200 {
		free := []int{1, 2, 3}
		(*dice)(nil).shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		orders[fmtInts(free)] = true
	}
	if len(orders) < 4 {
		t.Errorf("only %d orders in 200 tries: not shuffled", len(orders))
	}
	draws := func() []time.Duration {
		d := newDice(rand.NewPCG(7, 7))
		return []time.Duration{d.jitter(time.Second, 0.2), d.fullJitter(3), d.backoff(2), d.below(time.Minute)}
	}
	if a, b := draws(), draws(); !slices.Equal(a, b) {
		t.Errorf("one seed, two sequences: %v and %v", a, b)
	}
}
