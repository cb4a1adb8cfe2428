package lease

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Tests of the claim's round trips: the read sent with the first acquire,
// the poll read reused at a handover, and the fallbacks that keep the term
// right.

// trace records the fake's operations, and OnTry, in order.
type trace struct {
	mu  sync.Mutex
	ops []string
}

func (tr *trace) add(op string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.ops = append(tr.ops, op)
}

func (tr *trace) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.ops)
}

const opOnTry = "ontry"

// tracing installs a hook on s that records every operation, then runs
// extra (which may sleep, change the store, or fail the operation).
func tracing(s *fakeStore, extra func(ctx context.Context, op string) error) *trace {
	tr := &trace{}
	s.setHook(func(ctx context.Context, op string) error {
		tr.add(op)
		if extra != nil {
			return extra(ctx, op)
		}
		return nil
	})
	return tr
}

// wantOnTryBeforeEachAcquire: OnTry ran before every acquire, and only then.
func wantOnTryBeforeEachAcquire(t *testing.T, ops []string) {
	t.Helper()
	pending := false
	for _, op := range ops {
		switch op {
		case opOnTry:
			if pending {
				t.Errorf("OnTry twice without an acquire: %v", ops)
			}
			pending = true
		case opAcquire:
			if !pending {
				t.Errorf("an acquire without OnTry before it: %v", ops)
			}
			pending = false
		}
	}
	if pending {
		t.Errorf("OnTry without an acquire: %v", ops)
	}
}

func lastIndex(ops []string, op string) int {
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i] == op {
			return i
		}
	}
	return -1
}

func (s *fakeStore) setMeta(md map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range md {
		s.meta[k] = v
	}
	s.etag++
}

func (s *fakeStore) ifMatchesSent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ifMatches)
}

// Every request takes 100 ms: a start on a free lease takes three round
// trips (the acquire alone; the reads of the blob and of the pause marker
// together; the write); on a held lease, NoWait's answer takes two (the
// refused acquire, then the read that says who holds it).
func TestOptimisticStartRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name       string
		held       bool
		wantTime   time.Duration
		wantCounts map[string]int
	}{
		{"free", false, 300 * time.Millisecond, map[string]int{opAcquire: 1, opGetProps: 1, opSetMeta: 1}},
		{"held, no wait", true, 200 * time.Millisecond, map[string]int{opAcquire: 1, opGetProps: 1, opSetMeta: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newFakeStore(t)
				s.meta = map[string]string{"term": "41", "holder": "vm-9"}
				if tc.held {
					s.holdBy("other", time.Hour, nil)
				}
				tr := tracing(s, func(ctx context.Context, op string) error {
					time.Sleep(100 * time.Millisecond)
					return nil
				})
				t0 := time.Now()
				l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true,
					OnTry: func() { tr.add(opOnTry) }})
				if d := time.Since(t0); d != tc.wantTime {
					t.Errorf("took %v, want %v", d, tc.wantTime)
				}
				for op, want := range tc.wantCounts {
					if n := s.count(op); n != want {
						t.Errorf("%s calls = %d, want %d", op, n, want)
					}
				}
				wantOnTryBeforeEachAcquire(t, tr.get())
				if tc.held {
					if !errors.Is(err, ErrHeld) {
						t.Fatalf("err = %v, want ErrHeld", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if im := s.ifMatchesSent(); len(im) != 1 || im[0] == "" {
					t.Errorf("If-Match of the claim: %q, want the ETag read", im)
				}
				if l.Term != 42 || s.metadata()["term"] != "42" {
					t.Errorf("term %d / %s, want 42", l.Term, s.metadata()["term"])
				}
				s.setHook(nil)
				if err := l.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// A follower's handover is acquire and write: the poll read that found the
// lease free supplies the metadata.
func TestHandoverIsAcquireAndWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.holdBy("other", time.Hour, map[string]string{"holder": "vm-3", "term": "7"})
		tr := tracing(s, nil)
		done := make(chan *Lease, 1)
		go func() {
			l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{OnTry: func() { tr.add(opOnTry) }})
			if err != nil {
				t.Error(err)
			}
			done <- l
		}()
		time.Sleep(10 * time.Second)
		s.releaseBy()
		l := <-done
		ops := tr.get()
		wantOnTryBeforeEachAcquire(t, ops)
		last := lastIndex(ops, opAcquire) // the handover's
		if last < 2 || ops[last-2] != opGetProps || !slices.Equal(ops[last-1:], []string{opOnTry, opAcquire, opSetMeta}) {
			t.Errorf("operations %v: want a poll read, then only acquire and write", ops)
		}
		if im := s.ifMatchesSent(); len(im) != 1 || im[0] == "" {
			t.Errorf("If-Match %q, want the poll read's ETag", im)
		}
		if l == nil || l.Term != 8 {
			t.Fatalf("lease %+v, want term 8", l)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// Someone else took a term between a follower's poll read and its acquire:
// the ETags differ, the claim reads again, and writes If-Match that read's
// ETag the term that follows theirs. (An
// optimistic start reads only after its acquire, so it cannot meet this.)
func TestClaimETagMismatchFallsBack(t *testing.T) {
	for _, follower := range []bool{true} {
		name := "handover"
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newFakeStore(t)
				s.meta = map[string]string{"term": "5"}
				if follower {
					s.holdBy("other", time.Hour, nil)
				}
				var once sync.Once
				tr := tracing(s, func(ctx context.Context, op string) error {
					if op == opAcquire && s.leaseState() != StateLeased {
						// Let the optimistic read go first, then another
						// holder's term lands right before our acquire.
						time.Sleep(50 * time.Millisecond)
						once.Do(func() { s.setMeta(map[string]string{"term": "20", "holder": "vm-x"}) })
					}
					return nil
				})
				if follower {
					go func() {
						time.Sleep(10 * time.Second)
						s.releaseBy()
					}()
				}
				l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ops := tr.get()
				if n := len(ops); n < 3 || !slices.Equal(ops[n-2:], []string{opGetProps, opSetMeta}) ||
					(follower && ops[n-3] != opAcquire) {
					t.Errorf("operations %v: want the claim's own read after the acquire", ops)
				}
				if im := s.ifMatchesSent(); len(im) != 1 || im[0] == "" {
					t.Errorf("If-Match %q, want one: the fallback read's ETag", im)
				}
				if l.Term != 21 || s.metadata()["term"] != "21" || s.metadata()["holder"] != "vm-1" {
					t.Errorf("term %d, metadata %v: want 21 after the other holder's 20", l.Term, s.metadata())
				}
				s.setHook(nil)
				if err := l.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// The conditional write is refused (the blob changed in a way the ETag
// comparison did not see): the claim reads again and writes, If-Match that
// read's ETag, the term that follows what it finds.
func TestClaimFallsBackOn412(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.meta = map[string]string{"term": "5"}
		var once sync.Once
		tracing(s, func(ctx context.Context, op string) error {
			if op == opSetMeta {
				once.Do(func() { s.setMeta(map[string]string{"term": "30"}) })
			}
			return nil
		})
		l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		if im := s.ifMatchesSent(); len(im) != 2 || im[0] == "" || im[1] == "" || im[0] == im[1] {
			t.Errorf("If-Match %q, want the read's ETag, then the fallback read's", im)
		}
		if s.count(opGetProps) != 2 || s.count(opAcquire) != 1 || s.count(opRelease) != 0 {
			t.Errorf("reads %d, acquires %d, releases %d: want one more read, no new acquire",
				s.count(opGetProps), s.count(opAcquire), s.count(opRelease))
		}
		if l.Term != 31 || s.metadata()["term"] != "31" {
			t.Errorf("term %d / %s, want 31", l.Term, s.metadata()["term"])
		}
		s.setHook(nil)
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// --once-per decides on the acquire's service time when the reused read is
// older, and the run's start is dated by the acquire, never by a stale
// read. Optimistic start: the last run started window − 1 s before the read
// sent with the acquire: with an acquire answered at once that is within
// the window (skip); with one answered 3 s later it is not (run, dated by
// the acquire). Handover: a poll read that shows a run within the window
// skips at once (poll), so the last run started window + 1 s before it:
// run, dated by the acquire, whenever it answers.
func TestOncePerWithAReusedRead(t *testing.T) {
	const window = time.Minute
	for _, follower := range []bool{false, true} {
		for _, delay := range []time.Duration{0, 3 * time.Second} {
			name := map[bool]string{false: "optimistic start", true: "handover"}[follower] + ", acquire after " + delay.String()
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s := newFakeStore(t)
					var (
						mu       sync.Mutex
						readDate time.Time // the Date of the read that found the lease free
					)
					if follower {
						s.holdBy("other", time.Hour, map[string]string{"holder": "vm-3"})
					} else {
						// The read goes out with the acquire, now.
						readDate = time.Now().UTC().Truncate(time.Second)
						s.setMeta(map[string]string{"lastrunstart": formatTime(readDate.Add(-window + time.Second)),
							"lastrunholder": "vm-2", "term": "4"})
					}
					tr := tracing(s, func(ctx context.Context, op string) error {
						switch {
						case op == opGetProps && follower && s.leaseState() != StateLeased:
							mu.Lock()
							if readDate.IsZero() {
								readDate = time.Now().UTC().Truncate(time.Second)
								s.setMeta(map[string]string{"lastrunstart": formatTime(readDate.Add(-window - time.Second)),
									"lastrunholder": "vm-2", "term": "4"})
							}
							mu.Unlock()
						case op == opAcquire && s.leaseState() != StateLeased:
							time.Sleep(delay)
						}
						return nil
					})
					if follower {
						go func() {
							time.Sleep(10 * time.Second)
							s.releaseBy()
						}()
					}
					l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{OncePer: window})
					ops := tr.get()
					if i := slices.Index(ops, opAcquire); follower {
						i = lastIndex(ops, opAcquire)
						if n := len(ops) - i; slices.Contains(ops[i:], opGetProps) || n < 2 {
							t.Errorf("operations %v: the poll read was not reused", ops)
						}
					} else if s.count(opGetProps) != 1 || i < 0 {
						t.Errorf("operations %v: the concurrent read was not reused", ops)
					}
					if delay == 0 && !follower {
						var se *SkipError
						if !errors.As(err, &se) || se.Holder != "vm-2" {
							t.Fatalf("err = %v, want a *SkipError for vm-2's run", err)
						}
						if s.leaseState() != StateAvailable || s.metadata()["term"] != "4" {
							t.Errorf("state %s, metadata %v: want released, untouched", s.leaseState(), s.metadata())
						}
						return
					}
					if err != nil {
						t.Fatalf("err = %v: the run started window+2s before the acquire", err)
					}
					acquired := readDate.Add(delay)
					md := s.metadata()
					if md["lastrunstart"] != formatTime(acquired) || md["acquiredat"] != formatTime(acquired) ||
						!l.AcquiredAt.Equal(acquired) || md["term"] != "5" || md["lastrunholder"] != "vm-1" {
						t.Errorf("metadata %v, AcquiredAt %v: want the run and the term dated %s (the acquire), not %s (the read)",
							md, l.AcquiredAt, formatTime(acquired), formatTime(readDate))
					}
					s.setHook(nil)
					if err := l.Release(context.Background()); err != nil {
						t.Fatal(err)
					}
				})
			})
		}
	}
}

// Whether or not the service changes the ETag on acquire, the term grows
// by one at every acquisition (if it does, reused reads never match and
// every claim reads again).
func TestTermWhenAcquireChangesTheETag(t *testing.T) {
	for _, changes := range []bool{false, true} {
		t.Run(map[bool]string{false: "ETag kept", true: "ETag changed"}[changes], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newFakeStore(t)
				s.etagOnAcquire = changes
				a, b := newTestElector(t, s, "vm-a"), newTestElector(t, s, "vm-b")
				term := int64(0)
				for i, e := range []*Elector{a, b, a, b} {
					l, err := e.Acquire(context.Background(), WaitOptions{NoWait: true})
					if err != nil {
						t.Fatal(err)
					}
					term++
					if l.Term != term {
						t.Errorf("acquisition %d: term %d, want %d", i+1, l.Term, term)
					}
					if err := l.Release(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				// A handover: the poll read predates the acquire.
				s.holdBy("other", time.Hour, map[string]string{"holder": "vm-3", "term": "9"})
				tr := tracing(s, nil)
				go func() {
					time.Sleep(5 * time.Second)
					s.releaseBy()
				}()
				l, err := a.Acquire(context.Background(), WaitOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ops := tr.get()
				tail := ops[lastIndex(ops, opAcquire):]
				want := []string{opAcquire, opSetMeta}
				if changes {
					want = []string{opAcquire, opGetProps, opSetMeta}
				}
				if !slices.Equal(tail, want) {
					t.Errorf("handover: %v, want %v", tail, want)
				}
				if l.Term != 10 {
					t.Errorf("handover term %d, want 10", l.Term)
				}
				s.setHook(nil)
				if err := l.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// A read sent with the acquire that hangs is not waited for: the claim
// reads again once the acquire has answered (plus a grace), and the lease
// is claimed long before the hung read's own deadline.
func TestClaimDoesNotWaitForAHungRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		var once sync.Once
		tracing(s, func(ctx context.Context, op string) error {
			if op == opGetProps {
				hang := false
				once.Do(func() { hang = true })
				if hang {
					<-ctx.Done()
					return ctx.Err()
				}
			}
			return nil
		})
		t0 := time.Now()
		l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d != minReadGrace {
			t.Errorf("claimed after %v, want %v", d, minReadGrace)
		}
		if s.count(opGetProps) != 2 || l.Term != 1 {
			t.Errorf("reads %d, term %d", s.count(opGetProps), l.Term)
		}
		s.setHook(nil)
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// An attempt whose claim may have landed unanswered (claimSent) and that
// finds the lease held by another while the blob records its own claim
// waits for that holder under --no-wait -E 0 instead of giving up as held,
// and adopts its claim once the holder lets go; a holder that never lets go
// is waited for no longer than the storage budget.
func TestOwnClaimFoundHeld(t *testing.T) {
	for _, tc := range []struct {
		name      string
		letGoIn   time.Duration // 0: the holder never lets go
		wantErr   bool
		wantTaken time.Duration // at least
	}{
		{"the holder lets go", 10 * time.Second, false, 10 * time.Second},
		{"the holder never lets go", 0, true, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newFakeStore(t)
				start := time.Now().UTC().Truncate(time.Second)
				s.holdBy("other", time.Hour, map[string]string{"term": "2", "holder": "vm-1", "claim": "ours",
					"lastrunstart": formatTime(start), "lastrunholder": "vm-1", "lastrunterm": "2", "acquiredat": formatTime(start)})
				if tc.letGoIn > 0 {
					time.AfterFunc(tc.letGoIn, s.releaseBy)
				}
				e := newTestElector(t, s, "vm-1")
				w := WaitOptions{NoWait: true, HeldIsEnough: true, OncePer: 4 * time.Minute, StorageTimeout: 30 * time.Second}
				a := &attempt{e: e, b: e.b, w: w, leaseID: "11111111-1111-1111-1111-111111111111", nonce: "ours", claimSent: true}
				t0 := time.Now()
				l, err := a.run(context.Background())
				took := time.Since(t0)
				if took < tc.wantTaken || took > tc.wantTaken+5*time.Second {
					t.Errorf("took %v, want about %v", took, tc.wantTaken)
				}
				if tc.wantErr {
					if !errors.Is(err, ErrHeld) {
						t.Fatalf("err = %v, want ErrHeld once the storage budget is spent", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("err = %v, want our own claim adopted", err)
				}
				if l.Term != 2 || s.count(opSetMeta) != 0 {
					t.Errorf("term %d after %d metadata writes; want term 2, our claim's, and no new claim", l.Term, s.count(opSetMeta))
				}
			})
		})
	}
}

// A claim that takes until close to the stop deadline (a throttled service,
// a starved host) is not handed over as it is, to be lost as COMMAND
// starts: the lease is renewed first (a Renew Lease, never an acquire,
// which would succeed on a lease taken and given up by another since), and
// if that fails, acquired again and our own claim adopted once read back.
func TestSlowClaimRenewedBeforeHandover(t *testing.T) {
	for _, tc := range []struct {
		name         string
		failRenew    bool
		wantAcquires int
	}{
		{"renewed", false, 1},
		{"the renewal fails once", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newFakeStore(t)
				s.meta = map[string]string{"term": "4", "holder": "vm-9"}
				acquires, renews := 0, 0
				tracing(s, func(ctx context.Context, op string) error {
					// The acquire's answer takes 3 s, the claim's write 4.6 s:
					// 0.9 s are left of the 8.5 s before the stop deadline.
					switch op {
					case opSetMeta:
						time.Sleep(4600 * time.Millisecond)
					case opAcquire:
						acquires++
						if acquires == 1 {
							time.Sleep(3 * time.Second)
						}
					case opRenew:
						renews++
						if tc.failRenew && renews == 1 {
							return respErr(http.StatusServiceUnavailable, "ServerBusy")
						}
					}
					return nil
				})
				l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true, HeldIsEnough: true})
				if err != nil {
					t.Fatal(err)
				}
				if left := time.Until(l.stopAt()); left < l.renewTry() {
					t.Errorf("handed over %v before the stop deadline, less than one renewal try (%v)", left, l.renewTry())
				}
				if acquires != tc.wantAcquires || renews < 1 || s.count(opSetMeta) != 1 || l.Term != 5 {
					t.Errorf("%d acquires, %d renewals, %d claims, term %d; want %d acquires, a renewal, one claim, term 5",
						acquires, renews, s.count(opSetMeta), l.Term, tc.wantAcquires)
				}
				s.setHook(nil)
				if err := l.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
