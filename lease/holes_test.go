package lease

// Claims that must not be lost, against the in-memory model of the Blob
// service: a stop request while the claim is in flight, a run taken back
// with its occurrence, a slot whose claim's answer was lost, the last
// renewal before a lease is handed over, and a claim never handed over,
// taken back later. Each found by the simulator, or by a read of a fix for
// what it found; each pinned here.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
)

// oneOccurrence has one occurrence due, at occ (a lease.Schedule).
type oneOccurrence struct{ occ time.Time }

func (oneOccurrence) String() string { return "test" }

func (s oneOccurrence) Due(p *Properties) (Due, *SkipError) {
	if !p.Occurrence.Before(s.occ) {
		return Due{Occurrence: s.occ, Attempt: 1}, &SkipError{Reason: SkipStarted, Occurrence: s.occ}
	}
	return Due{Occurrence: s.occ, Attempt: 1}, nil
}

// A stop request (ctx cancelled) while the claim's write has landed and its
// answer hangs: the claim is seen through and taken back, so the window is
// not spent for nothing; another contender runs at once.
func TestClaimTakenBackOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		ctx, cancel := context.WithCancel(t.Context())
		svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			if r.Client == "a" && r.Op == blobsim.OpSetMetadata && r.Seq == 0 {
				return blobsim.Plan{Lose: true, LoseAs: 0} // applied, then no answer
			}
			return blobsim.Plan{}
		}))
		svc.OnApply(func(a blobsim.Applied) {
			if a.Client == "a" && a.Op == blobsim.OpSetMetadata && a.Seq == 0 {
				go func() { time.Sleep(100 * time.Millisecond); cancel() }() // SIGTERM, the answer still hanging
			}
		})
		_, err := blobsimElector(t, svc, "a", "job").Acquire(ctx, WaitOptions{NoWait: true, OncePer: time.Hour})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if b, _ := svc.Blob("leases", "job"); b.Metadata[mdLastRunStart] != "" {
			t.Errorf("the claim of a run that never started stands: %v", b.Metadata)
		}
		if _, err := blobsimElector(t, svc, "b", "job").Acquire(t.Context(), WaitOptions{NoWait: true, OncePer: time.Hour}); err != nil {
			t.Errorf("another contender: %v, want the lease (no run started within the window)", err)
		}
	})
}

// ReleaseUnused takes back the scheduled occurrence the claim recorded
// with the run: nobody started it, the next invocation runs it.
func TestReleaseUnusedTakesBackTheOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		s := oneOccurrence{occ: time.Now().Add(-time.Minute).UTC().Truncate(time.Second)}
		l, err := blobsimElector(t, svc, "a", "job").Acquire(t.Context(), WaitOptions{NoWait: true, Schedule: s})
		if err != nil {
			t.Fatal(err)
		}
		if l.Occurrence.IsZero() {
			t.Fatal("the claim recorded no occurrence")
		}
		if err := l.ReleaseUnused(t.Context()); err != nil {
			t.Fatal(err)
		}
		if b, _ := svc.Blob("leases", "job"); b.Metadata[mdOccurrence] != "" || b.Metadata[mdSchedule] != "" {
			t.Errorf("taken back, the blob still says the occurrence started: %v", b.Metadata)
		}
		if _, err := blobsimElector(t, svc, "b", "job").Acquire(t.Context(), WaitOptions{NoWait: true, Schedule: s}); err != nil {
			t.Errorf("the next invocation: %v, want the occurrence to run", err)
		}
	})
}

// With several slots, a slot whose claim's answer was lost (and whose read
// back failed at first) keeps its lease and adopts the claim, under
// --no-wait too: given back, its window would be spent with nothing run.
func TestSlotClaimLostAnswerAdopted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		// One slot is held by another; the other is free.
		hold, err := blobsimSlotsElector(t, svc, "b", 2).Acquire(t.Context(), WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		free := 1 - hold.Slot
		var mu sync.Mutex
		claims := 0
		svc.OnApply(func(a blobsim.Applied) {
			if a.Client == "a" && a.Op == blobsim.OpSetMetadata && a.Status == 200 {
				mu.Lock()
				claims++
				mu.Unlock()
			}
		})
		svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			switch {
			case r.Client != "a" || r.Blob != SlotBlob("job", free):
			case r.Op == blobsim.OpSetMetadata && r.Seq == 0:
				return blobsim.Plan{Lose: true, LoseAs: 500}
			case r.Op == blobsim.OpGetProperties && r.Seq < 3:
				return blobsim.Plan{Refuse: 503}
			}
			return blobsim.Plan{}
		}))
		l, err := blobsimSlotsElector(t, svc, "a", 2).Acquire(t.Context(), WaitOptions{NoWait: true, OncePer: time.Hour})
		if err != nil {
			t.Fatalf("err = %v, want slot %d with our claim adopted", err, free)
		}
		if l.Slot != free || claims != 1 {
			t.Errorf("slot %d after %d claims; want slot %d and one claim, ours, adopted", l.Slot, claims, free)
		}
	})
}

// The renewal before the handover comes after every request of the
// acquire, --once-per-host's checks included: a lease is never handed over
// with less than one renewal try before its stop deadline.
func TestRenewedAfterTheLastCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			switch {
			case r.Op == blobsim.OpSetMetadata && r.Seq == 0:
				return blobsim.Plan{AnswerDelay: 4 * time.Second} // a slow claim
			case r.Op == blobsim.OpGetProperties && r.Blob == DoneBlob("job", "vm-1"):
				return blobsim.Plan{AnswerDelay: 4 * time.Second} // a slow done-marker read after it
			}
			return blobsim.Plan{}
		}))
		l, err := blobsimElector(t, svc, "a", "job").Acquire(t.Context(), WaitOptions{NoWait: true, OncePerHost: "vm-1"})
		if err != nil {
			t.Fatal(err)
		}
		if left := time.Until(l.stopAt()); left < l.renewTry() {
			t.Errorf("handed over %v before the stop deadline, less than one renewal try (%v)", left, l.renewTry())
		}
	})
}

// blobsimSlotsElector is blobsimElector for a lease of n slots.
func blobsimSlotsElector(t *testing.T, svc *blobsim.Service, client string, n int) *Elector {
	t.Helper()
	e := blobsimElector(t, svc, client, "job")
	cfg := e.Config()
	cfg.Slots = n
	e, err := NewElector(e.b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A claim made, then not handed over because the lease lapsed before the
// renewal that precedes the handover (a slow --once-per-host check), and
// another contender claimed and took its claim back meanwhile: the blob
// records our claim again as its latest run. When the same Acquire gets
// the lease again, its new claim takes the old one back in the same write:
// the history never shows a run that nobody started (seeds 45125, 45586
// and 53307 of the simulator).
func TestEarlierClaimTakenBackByTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		var mu sync.Mutex
		var claimedAt time.Time // a's first claim
		svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			mu.Lock()
			defer mu.Unlock()
			if r.Client == "a" && r.Op == blobsim.OpGetProperties && !claimedAt.IsZero() && time.Since(claimedAt) < 17*time.Second {
				return blobsim.Plan{Unreachable: true} // the done check fails until the lease lapsed
			}
			return blobsim.Plan{}
		}))
		svc.OnApply(func(a blobsim.Applied) {
			mu.Lock()
			defer mu.Unlock()
			if a.Client == "a" && a.Op == blobsim.OpSetMetadata && claimedAt.IsZero() {
				claimedAt = time.Now()
				go func() {
					time.Sleep(16 * time.Second) // the lapsed lease taken, claimed, taken back
					l, err := blobsimElector(t, svc, "b", "job").Acquire(t.Context(), WaitOptions{NoWait: true})
					if err != nil {
						t.Errorf("b: %v, want the lapsed lease", err)
						return
					}
					if err := l.ReleaseUnused(t.Context()); err != nil {
						t.Errorf("b: take back: %v", err)
					}
				}()
			}
		})
		l, err := blobsimElector(t, svc, "a", "job").Acquire(t.Context(), WaitOptions{OncePerHost: "vm-1", Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		b, _ := svc.Blob("leases", "job")
		terms := historyTerms(b.Metadata, "a")
		if len(terms) != 1 || terms[0] != l.Term {
			t.Errorf("the history shows runs of terms %v by a; want only term %d, the one handed over", terms, l.Term)
		}
	})
}

// TestEarlierClaimTakenBackByTheNext, but the new claim's first write is
// refused (503, not applied): the earlier claim is still to take back, by
// the write the claim sends again from its next read.
func TestEarlierClaimTakenBackAfterARefusedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		var mu sync.Mutex
		var claimedAt time.Time
		svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			mu.Lock()
			defer mu.Unlock()
			if r.Client == "a" && r.Op == blobsim.OpGetProperties && !claimedAt.IsZero() && time.Since(claimedAt) < 17*time.Second {
				return blobsim.Plan{Unreachable: true}
			}
			if r.Client == "a" && r.Op == blobsim.OpSetMetadata && r.Blob == "job" && r.Seq == 1 {
				return blobsim.Plan{Refuse: 503} // the new claim's first write: refused, not applied
			}
			return blobsim.Plan{}
		}))
		svc.OnApply(func(a blobsim.Applied) {
			mu.Lock()
			defer mu.Unlock()
			if a.Client == "a" && a.Op == blobsim.OpSetMetadata && claimedAt.IsZero() {
				claimedAt = time.Now()
				go func() {
					time.Sleep(16 * time.Second)
					l, err := blobsimElector(t, svc, "b", "job").Acquire(t.Context(), WaitOptions{NoWait: true})
					if err != nil {
						t.Errorf("b: %v", err)
						return
					}
					if err := l.ReleaseUnused(t.Context()); err != nil {
						t.Errorf("b: take back: %v", err)
					}
				}()
			}
		})
		l, err := blobsimElector(t, svc, "a", "job").Acquire(t.Context(), WaitOptions{OncePerHost: "vm-1", Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		b, _ := svc.Blob("leases", "job")
		terms := historyTerms(b.Metadata, "a")
		if len(terms) != 1 || terms[0] != l.Term {
			t.Errorf("the history shows runs of terms %v by a; want only term %d, the one handed over", terms, l.Term)
		}
	})
}

// The same start, but b's term-2 run really starts and ends. a's renewal
// before the handover fails, a acquires the lease again with its lease ID
// (free now) and is asked to stop before its claim: the take-back of a's
// term-1 claim is made from a read of the blob, not from the metadata a
// last wrote, so b's run stays and the term does not go back.
func TestLapsedClaimTakeBackKeepsALaterRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var mu sync.Mutex
		var claimedAt time.Time
		acquires := 0
		svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			mu.Lock()
			defer mu.Unlock()
			if r.Client == "a" && r.Op == blobsim.OpGetProperties && !claimedAt.IsZero() && time.Since(claimedAt) < 25*time.Second {
				return blobsim.Plan{Unreachable: true}
			}
			return blobsim.Plan{}
		}))
		svc.OnApply(func(ap blobsim.Applied) {
			mu.Lock()
			defer mu.Unlock()
			if ap.Client == "a" && ap.Op == blobsim.OpAcquire && ap.Status < 300 {
				acquires++
				if acquires == 2 {
					cancel() // SIGTERM right as a has its lease again
				}
			}
			if ap.Client == "a" && ap.Op == blobsim.OpSetMetadata && claimedAt.IsZero() {
				claimedAt = time.Now()
				go func() {
					time.Sleep(16 * time.Second)
					l, err := blobsimElector(t, svc, "b", "job").Acquire(t.Context(), WaitOptions{NoWait: true})
					if err != nil {
						t.Errorf("b: %v", err)
						return
					}
					if err := l.RecordRunStart(t.Context()); err != nil {
						t.Error(err)
					}
					time.Sleep(2 * time.Second)
					if err := l.RecordRunEnd(t.Context(), 0); err != nil {
						t.Error(err)
					}
					if err := l.Release(t.Context()); err != nil {
						t.Error(err)
					}
				}()
			}
		})
		if _, err := blobsimElector(t, svc, "a", "job").Acquire(ctx, WaitOptions{OncePerHost: "vm-1", Timeout: time.Minute}); !errors.Is(err, context.Canceled) {
			t.Errorf("a: %v, want context.Canceled", err)
		}
		b, _ := svc.Blob("leases", "job")
		found := false
		for _, r := range ReadHistory(b.Metadata, false) {
			if r.Holder == "b" {
				found = true
			}
		}
		if !found {
			t.Errorf("b's run, which started and ended, is gone from the blob: %v", b.Metadata)
		}
		if b.Metadata[mdTerm] != "2" {
			t.Errorf("term = %s, want 2 (it went back)", b.Metadata[mdTerm])
		}
	})
}

// As TestLapsedClaimTakeBackKeepsALaterRun, without a stop request: a
// acquires again, and its term-1 claim, archived by b's run since, cannot
// be taken back: one warning names term 1, whether a's next claim finds it
// so or, after the pause marker's read fails once (a blip), the attempt's
// cleanup does (from a read: b's run stays). a's run is term 3.
func TestLapsedClaimArchivedIsWarnedOnce(t *testing.T) {
	for _, blip := range []bool{false, true} {
		t.Run(fmt.Sprintf("blip %v", blip), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testLapsedClaimArchived(t, blip) })
		})
	}
}

func testLapsedClaimArchived(t *testing.T, blip bool) {
	svc := blobsim.New()
	var mu sync.Mutex
	var claimedAt time.Time
	acquires := 0
	svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
		mu.Lock()
		defer mu.Unlock()
		if r.Client == "a" && r.Op == blobsim.OpGetProperties && !claimedAt.IsZero() && time.Since(claimedAt) < 20*time.Second {
			return blobsim.Plan{Unreachable: true}
		}
		if blip && r.Client == "a" && r.Op == blobsim.OpGetProperties && r.Blob == PauseBlob("job") && acquires == 2 {
			acquires++
			return blobsim.Plan{Refuse: 503}
		}
		return blobsim.Plan{}
	}))
	svc.OnApply(func(ap blobsim.Applied) {
		mu.Lock()
		defer mu.Unlock()
		if ap.Client == "a" && ap.Op == blobsim.OpAcquire && ap.Status < 300 && acquires < 2 {
			acquires++
		}
		if ap.Client == "a" && ap.Op == blobsim.OpSetMetadata && claimedAt.IsZero() {
			claimedAt = time.Now()
			go func() {
				time.Sleep(16 * time.Second)
				l, err := blobsimElector(t, svc, "b", "job").Acquire(t.Context(), WaitOptions{NoWait: true})
				if err != nil {
					t.Errorf("b: %v", err)
					return
				}
				time.Sleep(2 * time.Second)
				if err := l.RecordRunEnd(t.Context(), 0); err != nil {
					t.Error(err)
				}
				if err := l.Release(t.Context()); err != nil {
					t.Error(err)
				}
			}()
		}
	})
	var logs bytes.Buffer
	e := blobsimElector(t, svc, "a", "job")
	cfg := e.Config()
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
	e, err := NewElector(e.b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := e.Acquire(t.Context(), WaitOptions{OncePerHost: "vm-1", Timeout: time.Minute})
	if err != nil {
		t.Fatalf("a: %v, want the lease", err)
	}
	if l.Term != 3 {
		t.Errorf("a's term %d, want 3: term 2 is b's, whose run happened", l.Term)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, _ := svc.Blob("leases", "job")
	found := false
	for _, r := range ReadHistory(b.Metadata, false) {
		if r.Holder == "b" && r.Term == 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("b's run, which started and ended, is gone from the blob: %v", b.Metadata)
	}
	warned := strings.Count(logs.String(), "could not be taken back")
	if warned != 1 || !strings.Contains(logs.String(), "term=1") {
		t.Errorf("%d warnings that a claim could not be taken back, want one naming term 1: %q", warned, logs.String())
	}
}

// TestEarlierClaimTakenBackByTheNext with the claim's answer lost instead
// of a failed renewal: a's claim of term 1 lands, its answer is lost, a's
// requests fail until its lease lapsed; b acquires, claims term 2 and takes
// it back, so the blob records a's term-1 claim again as its latest run,
// without a's nonce. a's next claim takes the term-1 claim back.
func TestLostAnswerClaimTakenBackByTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		var mu sync.Mutex
		var claimedAt time.Time
		svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			mu.Lock()
			defer mu.Unlock()
			if r.Client == "a" && r.Op == blobsim.OpSetMetadata && r.Seq == 0 {
				return blobsim.Plan{Lose: true, LoseAs: -1} // applied, answer lost
			}
			if r.Client == "a" && !claimedAt.IsZero() && time.Since(claimedAt) < 17*time.Second {
				return blobsim.Plan{Unreachable: true}
			}
			return blobsim.Plan{}
		}))
		svc.OnApply(func(ap blobsim.Applied) {
			mu.Lock()
			defer mu.Unlock()
			if ap.Client == "a" && ap.Op == blobsim.OpSetMetadata && claimedAt.IsZero() {
				claimedAt = time.Now()
				go func() {
					time.Sleep(16 * time.Second)
					l, err := blobsimElector(t, svc, "b", "job").Acquire(t.Context(), WaitOptions{NoWait: true})
					if err != nil {
						t.Errorf("b: %v, want the lapsed lease", err)
						return
					}
					if err := l.ReleaseUnused(t.Context()); err != nil {
						t.Errorf("b: take back: %v", err)
					}
				}()
			}
		})
		var logs bytes.Buffer
		e := blobsimElector(t, svc, "a", "job")
		cfg := e.Config()
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
		e, err := NewElector(e.b, cfg)
		if err != nil {
			t.Fatal(err)
		}
		l, err := e.Acquire(t.Context(), WaitOptions{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		b, _ := svc.Blob("leases", "job")
		terms := historyTerms(b.Metadata, "a")
		if len(terms) != 1 || terms[0] != l.Term {
			t.Errorf("the history shows runs of terms %v by a; want only term %d, the one handed over (warnings: %q)",
				terms, l.Term, strings.TrimSpace(logs.String()))
		}
	})
}

// A claim whose renewal before the handover failed, taken back on a stop
// request when the lease is no longer ours (free: another only read it,
// and skipped for our claim's --once-per window): the take-back acquires
// the free lease with our lease ID first, then takes the claim back, and
// spends no window.
func TestLapsedClaimTakenBackFromAFreeLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var mu sync.Mutex
		var claimedAt time.Time
		svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			mu.Lock()
			defer mu.Unlock()
			if r.Client == "a" && r.Op == blobsim.OpGetProperties && !claimedAt.IsZero() && time.Since(claimedAt) < 17*time.Second {
				return blobsim.Plan{Unreachable: true} // the done check, slow
			}
			return blobsim.Plan{}
		}))
		svc.OnApply(func(ap blobsim.Applied) {
			mu.Lock()
			defer mu.Unlock()
			if ap.Client == "a" && ap.Op == blobsim.OpRenew && ap.Status >= 300 {
				cancel() // a stop request right as the renewal before the handover failed
			}
			if ap.Client == "a" && ap.Op == blobsim.OpSetMetadata && claimedAt.IsZero() {
				claimedAt = time.Now()
				go func() {
					time.Sleep(16 * time.Second)
					_, err := blobsimElector(t, svc, "b", "job").Acquire(t.Context(), WaitOptions{NoWait: true, OncePer: time.Hour})
					if !errors.Is(err, ErrSkipped) {
						t.Errorf("b: %v, want a skip for a's claim", err)
					}
				}()
			}
		})
		var logs bytes.Buffer
		e := blobsimElector(t, svc, "a", "job")
		cfg := e.Config()
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
		e, err := NewElector(e.b, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Acquire(ctx, WaitOptions{OncePerHost: "vm-1", OncePer: time.Hour, Timeout: time.Minute}); !errors.Is(err, context.Canceled) {
			t.Fatalf("a: %v, want context.Canceled", err)
		}
		b, _ := svc.Blob("leases", "job")
		for _, r := range ReadHistory(b.Metadata, false) {
			if r.Holder == "a" {
				t.Errorf("a's term-%d claim, whose run never started, stands on a free blob (state %s); warnings: %q",
					r.Term, b.State, strings.TrimSpace(logs.String()))
			}
		}
		if b.State == blobsim.Leased {
			t.Errorf("the lease acquired for the take-back is left held")
		}
	})
}

// A lapsed claim that is no longer in the blob (taken back already, as the
// next claim's write does), while another host holds the lease: the
// take-back's acquire is refused, its read finds nothing of ours, and no
// warning says a claim could not be taken back.
func TestLapsedTakeBackOfNothingWhileHeldIsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		ea := blobsimElector(t, svc, "a", "job")
		la, err := ea.Acquire(t.Context(), WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		claimMD, preRun, term, id := maps.Clone(la.meta), maps.Clone(la.preRun), la.Term, la.ID
		if err := la.ReleaseUnused(t.Context()); err != nil { // taken back: gone from the blob
			t.Fatal(err)
		}
		lb, err := blobsimElector(t, svc, "b", "job").Acquire(t.Context(), WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		defer lb.Release(t.Context())
		var logs bytes.Buffer
		cfg := ea.Config()
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
		h := newLease(ea.b, cfg, ea.dice, id, la.tOK, la.AcquiredAt)
		h.Term, h.meta, h.preRun, h.lapsed = term, claimMD, preRun, true
		if err := h.ReleaseUnused(t.Context()); err != nil {
			t.Errorf("release: %v", err)
		}
		if strings.Contains(logs.String(), "could not be taken back") {
			t.Errorf("warned for a claim not in the blob (term %d): %q", term, logs.String())
		}
	})
}

// historyTerms is the terms of holder's runs in md's history, newest first.
func historyTerms(md map[string]string, holder string) []int64 {
	var terms []int64
	for _, r := range ReadHistory(md, false) {
		if r.Holder == holder {
			terms = append(terms, r.Term)
		}
	}
	return terms
}
