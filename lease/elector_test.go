package lease

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
)

func newTestElector(t *testing.T, s *fakeStore, identity string) *Elector {
	t.Helper()
	cfg := testConfig()
	cfg.Identity = identity
	e, err := NewElector(s.client(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestAcquireFreeLeaseFastPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.setAllow(opAcquire, opGetProps, opSetMeta, opRelease)
		l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Term != 1 || l.Identity != "vm-1" || l.ID == "" || l.URL != s.client().url || l.Name != "lock" {
			t.Errorf("lease = %+v", l)
		}
		if l.AcquiredAt.IsZero() || l.Duration != 15*time.Second || l.StopBudget != 5*time.Second {
			t.Errorf("lease = %+v", l)
		}
		md := s.metadata()
		want := map[string]string{"holder": "vm-1", "term": "1", "leaseduration": "15",
			"acquiredat": formatTime(l.AcquiredAt), "leaderrunversion": "test"}
		for k, v := range want {
			if md[k] != v {
				t.Errorf("metadata %s = %q, want %q", k, md[k], v)
			}
		}
		if n := s.count(opAcquire); n != 1 {
			t.Errorf("acquires = %d, want 1", n)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAcquireCreatesContainerAndBlob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.containerExists, s.blobExists = false, false
		e := newTestElector(t, s, "vm-1")
		l, err := e.Acquire(context.Background(), WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		if !e.b.CreatedHere() {
			t.Error("CreatedHere is false after creating the blob")
		}
		for op, want := range map[string]int{opAcquire: 2, opContainer: 1, opUpload: 1, opSetMeta: 1} {
			if n := s.count(op); n != want {
				t.Errorf("%s calls = %d, want %d", op, n, want)
			}
		}
		// The read sent with the first acquire is reused if it ran after
		// the blob was created (same ETag as the second acquire's answer);
		// if it found nothing, the claim reads again.
		if n := s.count(opGetProps); n != 1 && n != 2 {
			t.Errorf("getprops calls = %d, want 1 or 2", n)
		}
		if l.Term != 1 {
			t.Errorf("term = %d", l.Term)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAcquireNeverOverwritesAnExistingBlob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.content = "precious"
		// The first acquire says the blob is missing (someone creates it
		// in between): the upload must not overwrite it.
		var once sync.Once
		s.setHook(func(ctx context.Context, op string) error {
			var err error
			if op == opAcquire {
				once.Do(func() { err = respErr(http.StatusNotFound, "BlobNotFound") })
			}
			return err
		})
		e := newTestElector(t, s, "vm-1")
		l, err := e.Acquire(context.Background(), WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		if s.content != "precious" || s.count(opUpload) != 1 || s.count(opContainer) != 0 {
			t.Errorf("content %q, uploads %d, container creates %d", s.content, s.count(opUpload), s.count(opContainer))
		}
		if e.b.CreatedHere() {
			t.Error("CreatedHere is true for a blob someone else created")
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFollowerPollsWithReadsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.holdBy("other", time.Hour, map[string]string{"holder": "vm-3", "term": "7"})
		s.setAllow(opAcquire, opGetProps, opSetMeta, opRelease)
		var waits []string
		e := newTestElector(t, s, "vm-1")
		t0 := time.Now()
		type result struct {
			l   *Lease
			err error
		}
		done := make(chan result, 1)
		go func() {
			l, err := e.Acquire(context.Background(), WaitOptions{OnWait: func(p *Properties) {
				waits = append(waits, p.Holder)
			}})
			done <- result{l, err}
		}()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := s.count(opAcquire); n != 1 {
			t.Errorf("acquires while leased = %d, want only the optimistic one", n)
		}
		// A read at once, then one every 2 s ± 20 %.
		if n := s.count(opGetProps); n < 13 || n > 20 {
			t.Errorf("reads in 30 s = %d, want 13..20", n)
		}
		released := time.Now()
		s.releaseBy()
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		if d := time.Since(released); d > 2400*time.Millisecond {
			t.Errorf("acquired %v after the release, want within one poll interval", d)
		}
		if r.l.Term != 8 {
			t.Errorf("term = %d, want 8", r.l.Term)
		}
		if len(waits) != 1 || waits[0] != "vm-3" {
			t.Errorf("OnWait calls %q, want one for vm-3", waits)
		}
		_ = t0
		if err := r.l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAcquireHeld(t *testing.T) {
	since := time.Date(1999, 12, 31, 23, 0, 0, 0, time.UTC)
	held := map[string]string{"holder": "vm-3", "term": "7", "acquiredat": formatTime(since)}
	wantHeld := func(t *testing.T, err error) {
		t.Helper()
		var he *HeldError
		if !errors.As(err, &he) || !errors.Is(err, ErrHeld) {
			t.Fatalf("err = %v, want *HeldError", err)
		}
		if he.Holder != "vm-3" || he.Term != 7 || !he.Since.Equal(since) {
			t.Errorf("HeldError = %+v", he)
		}
		if !strings.Contains(err.Error(), "vm-3") {
			t.Errorf("message %q does not name the holder", err)
		}
	}
	t.Run("no wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newFakeStore(t)
			s.holdBy("other", time.Hour, held)
			s.setAllow(opAcquire, opGetProps)
			t0 := time.Now()
			_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true})
			wantHeld(t, err)
			if time.Since(t0) != 0 || s.count(opAcquire) != 1 || s.count(opGetProps) != 1 {
				t.Errorf("took %v, %d acquires, %d reads", time.Since(t0), s.count(opAcquire), s.count(opGetProps))
			}
		})
	})
	t.Run("timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newFakeStore(t)
			s.holdBy("other", time.Hour, held)
			s.setAllow(opAcquire, opGetProps)
			t0 := time.Now()
			_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{Timeout: 10 * time.Second})
			wantHeld(t, err)
			if d := time.Since(t0); d != 10*time.Second {
				t.Errorf("gave up after %v, want 10s", d)
			}
		})
	})
	t.Run("context ends the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newFakeStore(t)
			s.holdBy("other", time.Hour, held)
			s.setAllow(opAcquire, opGetProps)
			ctx, cancel := context.WithCancel(context.Background())
			t0 := time.Now()
			time.AfterFunc(5*time.Second, cancel)
			_, err := newTestElector(t, s, "vm-1").Acquire(ctx, WaitOptions{})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if d := time.Since(t0); d != 5*time.Second {
				t.Errorf("returned after %v, want at once at 5s", d)
			}
		})
	})
}

func TestTermGrowsAcrossHolders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		a, b := newTestElector(t, s, "vm-a"), newTestElector(t, s, "vm-b")
		for i, e := range []*Elector{a, b, a} {
			l, err := e.Acquire(context.Background(), WaitOptions{NoWait: true})
			if err != nil {
				t.Fatal(err)
			}
			if l.Term != int64(i+1) {
				t.Errorf("acquisition %d: term %d", i+1, l.Term)
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if md := s.metadata(); md["term"] != "3" || md["holder"] != "vm-a" {
			t.Errorf("metadata %v", md)
		}
	})
}

func TestMetadataKeepsForeignKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.meta = map[string]string{"Owner": "team-x", "Term": "41", "lastrunend": "2000-01-01T00:00:00Z", "lastexit": "3"}
		l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		md := s.metadata()
		if md["owner"] != "team-x" || md["term"] != "42" || l.Term != 42 || md["holder"] != "vm-1" {
			t.Errorf("after acquire: %v", md)
		}
		// The claim recorded the run's start with the term, in one write.
		if want := formatTime(time.Now().UTC().Truncate(time.Second)); md["lastrunstart"] != want ||
			md["lastrunholder"] != "vm-1" || md["lastrunend"] != "" || md["lastexit"] != "" {
			t.Errorf("after acquire: the run's start is not recorded: %v", md)
		}
		writes := s.count(opSetMeta)
		if err := l.RecordRunStart(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := s.count(opSetMeta); n != writes {
			t.Errorf("RecordRunStart right after Acquire wrote again (%d writes, want %d)", n, writes)
		}
		// A later start is recorded anew.
		time.Sleep(3 * time.Second)
		if err := l.RecordRunStart(context.Background()); err != nil {
			t.Fatal(err)
		}
		md = s.metadata()
		if md["owner"] != "team-x" || md["lastrunholder"] != "vm-1" || md["lastrunend"] != "" || md["lastexit"] != "" {
			t.Errorf("after RecordRunStart: %v", md)
		}
		// Service time: the latest Date plus the time since, to the second.
		if want := formatTime(time.Now().UTC().Truncate(time.Second)); md["lastrunstart"] != want {
			t.Errorf("lastrunstart = %s, want %s", md["lastrunstart"], want)
		}
		// The end is the latest the service's clock may read, to the
		// second rounded up: 4.5 s, plus the second a Date may hide, is 6 s.
		time.Sleep(1500 * time.Millisecond)
		if err := l.RecordRunEnd(context.Background(), 3); err != nil {
			t.Fatal(err)
		}
		p, err := s.client().Properties(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p.Metadata["owner"] != "team-x" || p.LastRun == nil || p.LastRun.Holder != "vm-1" ||
			p.LastRun.ExitCode == nil || *p.LastRun.ExitCode != 3 || p.LastRun.End.Sub(p.LastRun.Start) != 3*time.Second {
			t.Errorf("after RecordRunEnd: %+v %+v", p, p.LastRun)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAcquireRefusesAMalformedTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.meta = map[string]string{"term": "seven"}
		_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true})
		var se *StorageError
		if !errors.As(err, &se) || se.Transient() {
			t.Fatalf("err = %v, want a permanent StorageError", err)
		}
		if s.leaseState() != StateAvailable || s.metadata()["term"] != "seven" {
			t.Errorf("state %s, metadata %v: want released and untouched", s.leaseState(), s.metadata())
		}
	})
}

func TestOncePer(t *testing.T) {
	t.Run("after acquiring", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newFakeStore(t)
			start := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
			s.meta = map[string]string{"term": "4", "lastrunstart": formatTime(start), "lastrunholder": "vm-2"}
			s.setAllow(opAcquire, opGetProps, opRelease)
			_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true, OncePer: 4 * time.Minute})
			var se *SkipError
			if !errors.As(err, &se) || !errors.Is(err, ErrSkipped) {
				t.Fatalf("err = %v, want *SkipError", err)
			}
			if se.Holder != "vm-2" || !se.Start.Equal(start) || se.Window != 4*time.Minute {
				t.Errorf("SkipError = %+v", se)
			}
			if s.leaseState() != StateAvailable || s.count(opRelease) != 1 || s.metadata()["term"] != "4" {
				t.Errorf("state %s, releases %d, term %s: want released before returning, term untouched",
					s.leaseState(), s.count(opRelease), s.metadata()["term"])
			}
		})
	})
	t.Run("contender, even with no-wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newFakeStore(t)
			start := time.Now().Add(-30 * time.Second).UTC()
			s.holdBy("other", time.Hour, map[string]string{"holder": "vm-2", "lastrunstart": formatTime(start), "lastrunholder": "vm-2"})
			s.setAllow(opAcquire, opGetProps)
			_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true, OncePer: 4 * time.Minute})
			if !errors.Is(err, ErrSkipped) {
				t.Fatalf("err = %v, want ErrSkipped", err)
			}
			_, err = newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true})
			if !errors.Is(err, ErrHeld) {
				t.Fatalf("without once-per: err = %v, want ErrHeld", err)
			}
		})
	})
	t.Run("outside the window", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newFakeStore(t)
			s.meta = map[string]string{"lastrunstart": formatTime(time.Now().Add(-5 * time.Minute)), "lastrunholder": "vm-2"}
			l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true, OncePer: 4 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("held and outside the window", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newFakeStore(t)
			s.holdBy("other", time.Hour, map[string]string{"lastrunstart": formatTime(time.Now().Add(-5 * time.Minute))})
			_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true, OncePer: 4 * time.Minute})
			if !errors.Is(err, ErrHeld) {
				t.Fatalf("err = %v, want ErrHeld", err)
			}
		})
	})
}

// A claim refused by throttling did not land: it is read back (no nonce of
// ours), sent again, and the lease is kept throughout.
func TestThrottledTermWriteIsSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		var once sync.Once
		s.setHook(func(ctx context.Context, op string) error {
			var err error
			if op == opSetMeta {
				once.Do(func() { err = respErr(http.StatusServiceUnavailable, "ServerBusy") })
			}
			return err
		})
		l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		if s.count(opRelease) != 0 || s.count(opAcquire) != 1 || s.count(opSetMeta) != 2 || l.Term != 1 || s.metadata()["term"] != "1" {
			t.Errorf("releases %d, acquires %d, writes %d, term %d / %s",
				s.count(opRelease), s.count(opAcquire), s.count(opSetMeta), l.Term, s.metadata()["term"])
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// A claim that landed but whose answer was lost is recognised by its nonce
// when read back: the term goes up by exactly one, the once-per window is
// not burnt by our own start, and the history has no run that never
// happened.
func TestLostClaimAnswerIsRecognised(t *testing.T) {
	for _, lostAcquire := range []bool{false, true} {
		name := map[bool]string{false: "claim", true: "acquire and claim"}[lostAcquire]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newFakeStore(t)
				s.meta = map[string]string{"term": "7", "holder": "vm-2",
					"lastrunstart": formatTime(time.Now().Add(-time.Hour)), "lastrunend": formatTime(time.Now().Add(-50 * time.Minute)),
					"lastrunholder": "vm-2", "lastexit": "0"}
				s.loseAnswers(opSetMeta, 1)
				if lostAcquire {
					s.loseAnswers(opAcquire, 1)
				}
				l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(),
					WaitOptions{NoWait: true, OncePer: 4 * time.Minute})
				if err != nil {
					t.Fatalf("Acquire: %v, want our own landed claim to stand", err)
				}
				md := s.metadata()
				if l.Term != 8 || md["term"] != "8" || md["holder"] != "vm-1" {
					t.Errorf("term %d, metadata %v: want 8, held by vm-1", l.Term, md)
				}
				if n := s.count(opSetMeta); n != 1 {
					t.Errorf("%d metadata writes, want the one that landed", n)
				}
				if err := l.RecordRunStart(context.Background()); err != nil || s.count(opSetMeta) != 1 {
					t.Errorf("RecordRunStart: %v, %d writes: the claim recorded the start", err, s.count(opSetMeta))
				}
				for _, r := range ReadHistory(s.metadata(), true) {
					if r.Holder == "vm-1" && r.EndUnknown() {
						t.Errorf("history has a phantom run: %+v", r)
					}
				}
				if err := l.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

func TestAcquireStorageFailures(t *testing.T) {
	sasURL := "https://acct.blob.core.windows.net/c/lock?comp=lease&sv=2024&sig=SECRETSIG"
	for _, tc := range []struct {
		name      string
		err       error
		wantAfter time.Duration // 0: at once
		status    int
	}{
		{"403 at once", respErr(http.StatusForbidden, "AuthorizationPermissionMismatch"), 0, 403},
		{"400 at once", respErr(http.StatusBadRequest, "InvalidHeaderValue"), 0, 400},
		{"503 for the storage timeout", respErr(http.StatusServiceUnavailable, "ServerBusy"), DefaultStorageTimeout, 503},
		{"429 for the storage timeout", respErr(http.StatusTooManyRequests, "TooManyRequests"), DefaultStorageTimeout, 429},
		{"network for the storage timeout", &url.Error{Op: "Put", URL: sasURL, Err: errors.New("connection refused")}, DefaultStorageTimeout, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newFakeStore(t)
				s.setHook(func(ctx context.Context, op string) error { return tc.err })
				t0 := time.Now()
				_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true})
				var se *StorageError
				if !errors.As(err, &se) || !errors.Is(err, ErrUnavailable) || se.StatusCode != tc.status {
					t.Fatalf("err = %v, want a StorageError with status %d", err, tc.status)
				}
				d := time.Since(t0)
				if tc.wantAfter == 0 && d != 0 {
					t.Errorf("gave up after %v, want at once", d)
				}
				if tc.wantAfter > 0 && (d < tc.wantAfter || d > tc.wantAfter+3*time.Second) {
					t.Errorf("gave up after %v, want about %v", d, tc.wantAfter)
				}
				if strings.Contains(err.Error(), "SECRETSIG") || strings.Contains(err.Error(), "sig=") {
					t.Errorf("error leaks the SAS: %v", err)
				}
			})
		})
	}
}

func TestAcquireRecoversFromATransientFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		s.holdBy("other", time.Hour, map[string]string{"holder": "vm-3"})
		var (
			mu    sync.Mutex
			reads int
		)
		s.setHook(func(ctx context.Context, op string) error {
			if op != opGetProps {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			reads++
			switch reads {
			case 2:
				<-ctx.Done() // storage hangs for a while
				return ctx.Err()
			case 3:
				return respErr(http.StatusServiceUnavailable, "ServerBusy")
			}
			return nil
		})
		go func() {
			time.Sleep(30 * time.Second)
			s.releaseBy()
		}()
		l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// The blob deleted under a holder the follower saw: the follower waits out
// the lease duration it last saw, from when it found the blob gone, before
// it creates the blob again, and the new term continues from the last one
// it saw.
func TestFollowerWaitsOutAHolderWhoseBlobIsGone(t *testing.T) {
	for _, what := range []string{"blob", "container"} {
		t.Run(what, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newFakeStore(t)
				s.holdBy("other", time.Hour, map[string]string{"holder": "vm-9", "term": "41", "leaseduration": "30"})
				goneCh := make(chan time.Time, 1)
				go func() {
					time.Sleep(5 * time.Second)
					s.mu.Lock()
					if what == "blob" {
						s.blobExists = false
					} else {
						s.containerExists, s.blobExists = false, false
					}
					s.meta, s.leaseID, s.state = map[string]string{}, "", StateAvailable
					s.mu.Unlock()
					goneCh <- time.Now()
				}()
				l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{})
				if err != nil {
					t.Fatal(err)
				}
				gone := <-goneCh
				// Found gone at the first poll after the deletion, and
				// created at the first poll after the wait: each at most a
				// poll interval (+20 %) late.
				if d := time.Since(gone); d < 30*time.Second || d > 30*time.Second+2*2400*time.Millisecond {
					t.Errorf("created again %v after the deletion, want the 30 s lease waited out", d)
				}
				if l.Term != 42 || s.metadata()["term"] != "42" {
					t.Errorf("term %d / %s, want 42: never back to 1", l.Term, s.metadata()["term"])
				}
				if err := l.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// A lease given back without running COMMAND takes back the run start its
// claim recorded: the history and the once-per window are as before, the
// term stays as claimed.
func TestReleaseUnusedTakesBackTheRunStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFakeStore(t)
		before := map[string]string{"term": "7", "holder": "vm-2", "lastrunstart": formatTime(time.Now().Add(-time.Hour)),
			"lastrunend": formatTime(time.Now().Add(-50 * time.Minute)), "lastrunholder": "vm-2", "lastrunterm": "7", "lastexit": "0"}
		s.meta = maps.Clone(before)
		l, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true, OncePer: 4 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.ReleaseUnused(context.Background()); err != nil {
			t.Fatal(err)
		}
		md := s.metadata()
		for _, k := range []string{"lastrunstart", "lastrunend", "lastrunholder", "lastrunterm", "lastexit"} {
			if md[k] != before[k] {
				t.Errorf("%s = %q, want %q as before the claim", k, md[k], before[k])
			}
		}
		if len(ReadHistory(md, false)) != 1 || md["term"] != "8" {
			t.Errorf("history %+v, term %s: want vm-2's run alone, term 8", ReadHistory(md, false), md["term"])
		}
		// The claim's nonce is gone with it: a later try of the same
		// Acquire would otherwise adopt a claim whose keys were taken back.
		if n, ok := md["claim"]; ok {
			t.Errorf("claim = %q after the take-back, want none", n)
		}
		// The window is open again for the next contender.
		l, err = newTestElector(t, s, "vm-3").Acquire(context.Background(), WaitOptions{NoWait: true, OncePer: 4 * time.Minute})
		if err != nil {
			t.Fatalf("the next contender: %v, want the window open", err)
		}
		_ = l.Release(context.Background())
	})
}

// A losing contender for whom held and skipped end alike (HeldIsEnough)
// costs one request; one whose first acquire was throttled and the next
// refused as held owes no release: a refusal proves none of its acquires,
// all with the same lease ID, holds the lease.
func TestLoserRequests(t *testing.T) {
	t.Run("held is enough", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newFakeStore(t)
			s.holdBy("other", time.Hour, map[string]string{"holder": "vm-9"})
			_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true, HeldIsEnough: true})
			if !errors.Is(err, ErrHeld) {
				t.Fatalf("err = %v, want ErrHeld", err)
			}
			if s.count(opAcquire) != 1 || s.count(opGetProps) != 0 {
				t.Errorf("acquires %d, reads %d: want the refused acquire alone", s.count(opAcquire), s.count(opGetProps))
			}
		})
	})
	t.Run("throttled, then held", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newFakeStore(t)
			s.holdBy("other", time.Hour, map[string]string{"holder": "vm-9"})
			var once sync.Once
			s.setHook(func(ctx context.Context, op string) error {
				var err error
				if op == opAcquire {
					once.Do(func() { err = respErr(http.StatusServiceUnavailable, "ServerBusy") })
				}
				return err
			})
			_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true})
			if !errors.Is(err, ErrHeld) {
				t.Fatalf("err = %v, want ErrHeld", err)
			}
			if s.count(opRelease) != 0 {
				t.Errorf("%d releases after a refusal, want none", s.count(opRelease))
			}
		})
	})
}

// A contender that comes late (ReadFirst) and finds a run started within
// the window skips on one read, whether the lease is still held by that run
// or already free again.
func TestReadFirstSkipsOnOneRead(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(map[bool]string{false: "free again", true: "held"}[held], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newFakeStore(t)
				md := map[string]string{"holder": "vm-2", "term": "3", "lastrunstart": formatTime(time.Now().Add(-time.Minute)), "lastrunholder": "vm-2"}
				if held {
					s.holdBy("other", time.Hour, md)
				} else {
					s.meta = md
				}
				_, err := newTestElector(t, s, "vm-1").Acquire(context.Background(), WaitOptions{NoWait: true, OncePer: 4 * time.Minute, ReadFirst: true})
				if !errors.Is(err, ErrSkipped) {
					t.Fatalf("err = %v, want skipped", err)
				}
				if s.count(opGetProps) != 1 || s.count(opAcquire) != 0 {
					t.Errorf("reads %d, acquires %d: want one read", s.count(opGetProps), s.count(opAcquire))
				}
			})
		})
	}
}

// The first retry of a run of storage failures says so at info level,
// once, with the budget left; the retries after it say nothing above
// debug, and a success starts the count again.
func TestStorageRetriesSayWhenTheyBegin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failFor  time.Duration // every request fails with 503 until then
		wantErr  bool
		budget   string
		timeout  time.Duration // WaitOptions.Timeout
		wantInfo int
	}{
		{"recovers", 10 * time.Second, false, "for_up_to=1m0s", 0, 1},
		{"gives up after the storage timeout", time.Hour, true, "for_up_to=1m0s", 0, 1},
		{"with --timeout, its time left", 10 * time.Second, false, "for_up_to=5m0s", 5 * time.Minute, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newFakeStore(t)
				t0 := time.Now()
				s.setHook(func(ctx context.Context, op string) error {
					if time.Since(t0) < tc.failFor {
						return respErr(http.StatusServiceUnavailable, "ServerBusy")
					}
					return nil
				})
				var log strings.Builder
				cfg := testConfig()
				cfg.Identity = "vm-1"
				cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Info, DisableTime: true})
				e, err := NewElector(s.client(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				l, err := e.Acquire(context.Background(), WaitOptions{NoWait: tc.timeout == 0, Timeout: tc.timeout})
				if (err != nil) != tc.wantErr {
					t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
				}
				if l != nil {
					defer l.Release(context.Background())
				}
				lines := strings.Count(log.String(), "storage not answering; retrying")
				if lines != tc.wantInfo || !strings.Contains(log.String(), "[INFO]  lease: storage not answering; retrying: error=\"lease: acquire: storage answered 503 ServerBusy\" "+tc.budget) {
					t.Errorf("%d lines, want %d saying %s:\n%s", lines, tc.wantInfo, tc.budget, log.String())
				}
			})
		})
	}
}
