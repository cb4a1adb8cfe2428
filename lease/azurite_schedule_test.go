package lease

import (
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
)

// fixedSchedule has one occurrence, occ, with the rules of --schedule: not
// before the blob was made, not once started, not past the deadline.
type fixedSchedule struct {
	occ      time.Time
	deadline time.Duration
}

func (s fixedSchedule) String() string { return "test" }

func (s fixedSchedule) Due(p *Properties) (Due, *SkipError) {
	now, created, last := p.Date, p.Created, p.Occurrence
	d := Due{Occurrence: s.occ, Attempt: 1}
	switch {
	case now.Before(s.occ), !created.IsZero() && !s.occ.After(created):
		return d, &SkipError{Reason: SkipNotDue, Occurrence: s.occ}
	case !last.IsZero() && !last.Before(s.occ):
		return d, &SkipError{Reason: SkipStarted, Occurrence: s.occ}
	case s.deadline > 0 && now.Sub(s.occ) > s.deadline:
		return d, &SkipError{Reason: SkipMissed, Occurrence: s.occ}
	}
	return d, nil
}

// scheduledBlob makes the lease blob and returns an occurrence due a
// second after it was made, once the service's clock has passed it.
func scheduledBlob(t *testing.T, c *Blob) time.Time {
	t.Helper()
	l, err := azuriteElector(t, c, "setup", nil).Acquire(t.Context(), WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	p := mustProps(t, c)
	if p.Created.IsZero() {
		t.Fatal("Get Blob Properties gave no creation time")
	}
	occ := p.Created.Add(time.Second)
	for i := 0; mustProps(t, c).Date.Before(occ.Add(time.Second)); i++ {
		if i > 40 {
			t.Fatal("the service's clock did not pass the occurrence")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return occ
}

func skipReason(err error) (SkipReason, bool) {
	var skip *SkipError
	if errors.As(err, &skip) {
		return skip.Reason, true
	}
	return 0, false
}

// Three contenders at one occurrence: one runs it; the others skip (the
// occurrence is recorded) or find it held; one coming after skips too, and
// the metadata records the occurrence with the run.
func TestAzuriteScheduleOneRunPerOccurrence(t *testing.T) {
	cs := azuriteConnectionString(t)
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "report"}
	c := azuriteBlob(t, cfg)
	occ := scheduledBlob(t, c)
	s := fixedSchedule{occ: occ}
	var (
		mu   sync.Mutex
		ran  []*Lease
		errs []error
		wg   sync.WaitGroup
	)
	for _, id := range []string{"vm-a", "vm-b", "vm-c"} {
		e := azuriteElector(t, azuriteBlob(t, cfg), id, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := e.Acquire(t.Context(), WaitOptions{NoWait: true, ReadFirst: true, Schedule: s})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ran = append(ran, l)
		}()
	}
	wg.Wait()
	if len(ran) != 1 {
		t.Fatalf("%d contenders ran the occurrence, want 1 (errors: %v)", len(ran), errs)
	}
	for _, err := range errs {
		var held *HeldError
		if r, ok := skipReason(err); !(ok && r == SkipStarted) && !errors.As(err, &held) {
			t.Errorf("a losing contender: %v, want skipped (started) or held", err)
		}
	}
	l := ran[0]
	if !l.Occurrence.Equal(occ) {
		t.Errorf("the lease's occurrence %s, want %s", l.Occurrence, occ)
	}
	if err := l.RecordRunEnd(t.Context(), 1); err != nil { // a failed run counts too
		t.Fatal(err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	p := mustProps(t, c)
	if !p.Occurrence.Equal(occ) || p.Schedule != "test" {
		t.Errorf("metadata: schedule %q occurrence %s, want test %s", p.Schedule, p.Occurrence, occ)
	}
	_, err := azuriteElector(t, c, "vm-d", nil).Acquire(t.Context(), WaitOptions{NoWait: true, ReadFirst: true, Schedule: s})
	if r, ok := skipReason(err); !ok || r != SkipStarted {
		t.Errorf("a contender after the run: %v, want skipped (started)", err)
	}
	// The optimistic acquire (no read first) skips in the claim and gives
	// the lease back.
	_, err = azuriteElector(t, c, "vm-e", nil).Acquire(t.Context(), WaitOptions{NoWait: true, Schedule: s})
	if r, ok := skipReason(err); !ok || r != SkipStarted {
		t.Errorf("an optimistic contender after the run: %v, want skipped (started)", err)
	}
	if p := mustProps(t, c); p.State == StateLeased || p.Term != l.Term {
		t.Errorf("after the skips: state %s term %d, want free, term %d", p.State, p.Term, l.Term)
	}
}

// The fleet down across the occurrence: the first invocation after it runs
// it, late, once; an occurrence from before the blob was made never runs;
// past the starting deadline, none runs and nothing is written.
func TestAzuriteScheduleLateAndMissed(t *testing.T) {
	cs := azuriteConnectionString(t)
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "report"}
	c := azuriteBlob(t, cfg)
	occ := scheduledBlob(t, c)
	created := mustProps(t, c).Created
	e := azuriteElector(t, c, "vm-a", nil)

	_, err := e.Acquire(t.Context(), WaitOptions{NoWait: true, ReadFirst: true, Schedule: fixedSchedule{occ: created}})
	if r, ok := skipReason(err); !ok || r != SkipNotDue {
		t.Errorf("an occurrence at the blob's creation: %v, want skipped (not due)", err)
	}
	_, err = e.Acquire(t.Context(), WaitOptions{NoWait: true, ReadFirst: true, Schedule: fixedSchedule{occ: occ, deadline: 500 * time.Millisecond}})
	if r, ok := skipReason(err); !ok || r != SkipMissed {
		t.Errorf("past the deadline: %v, want skipped (missed)", err)
	}
	if p := mustProps(t, c); !p.Occurrence.IsZero() || p.Term != 1 {
		t.Errorf("after the skips: occurrence %s term %d, want none, term 1", p.Occurrence, p.Term)
	}
	l, err := e.Acquire(t.Context(), WaitOptions{NoWait: true, ReadFirst: true, Schedule: fixedSchedule{occ: occ, deadline: time.Hour}})
	if err != nil {
		t.Fatalf("late, within the deadline: %v, want the occurrence to run", err)
	}
	if !l.Occurrence.Equal(occ) {
		t.Errorf("occurrence %s, want %s", l.Occurrence, occ)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A claim whose answer is lost still records the occurrence, once: the
// claimant finds its own nonce and runs it; nobody runs it again.
func TestAzuriteScheduleLostClaimAnswer(t *testing.T) {
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
			occ := scheduledBlob(t, c)
			s := fixedSchedule{occ: occ}
			proxy.Set(faultproxy.Mode{LoseAnswer: faultproxy.LoseAnswer{Op: faultproxy.OpSetMetadata, Count: 1, Status: tc.status, Code: tc.code}})
			l, err := azuriteElector(t, azuriteBlob(t, cfg), "vm-b", nil).Acquire(t.Context(), WaitOptions{NoWait: true, ReadFirst: true, Schedule: s})
			if err != nil {
				t.Fatalf("Acquire after a lost claim answer: %v, want our own claim to stand", err)
			}
			if got := proxy.Counts().Lost; got != 1 {
				t.Fatalf("answers lost: %d, want 1", got)
			}
			proxy.Set(faultproxy.Mode{})
			if l.Term != 2 || !l.Occurrence.Equal(occ) {
				t.Errorf("term %d occurrence %s, want 2 and %s", l.Term, l.Occurrence, occ)
			}
			if err := l.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
			if p := mustProps(t, c); !p.Occurrence.Equal(occ) || p.Term != 2 {
				t.Errorf("metadata: occurrence %s term %d, want %s, 2", p.Occurrence, p.Term, occ)
			}
			_, err = azuriteElector(t, c, "vm-c", nil).Acquire(t.Context(), WaitOptions{NoWait: true, ReadFirst: true, Schedule: s})
			if r, ok := skipReason(err); !ok || r != SkipStarted {
				t.Errorf("another contender: %v, want skipped (started)", err)
			}
		})
	}
}

// An earlier run still holding the lease at the next occurrence: the
// contender gives up as held (leaderrun exits 0 quietly), nothing is
// written, and once the lease is free the occurrence runs.
func TestAzuriteScheduleEarlierRunHolding(t *testing.T) {
	cs := azuriteConnectionString(t)
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "report"}
	c := azuriteBlob(t, cfg)
	occ := scheduledBlob(t, c)
	first, err := azuriteElector(t, c, "vm-a", nil).Acquire(t.Context(), WaitOptions{NoWait: true, ReadFirst: true, Schedule: fixedSchedule{occ: occ}})
	if err != nil {
		t.Fatal(err)
	}
	next := fixedSchedule{occ: occ.Add(time.Second)} // due at once: the service's clock is past it
	eb := azuriteElector(t, azuriteBlob(t, cfg), "vm-b", nil)
	_, err = eb.Acquire(t.Context(), WaitOptions{NoWait: true, ReadFirst: true, Schedule: next})
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("the next occurrence while the earlier run holds: %v, want held", err)
	}
	if p := mustProps(t, c); !p.Occurrence.Equal(occ) {
		t.Errorf("occurrence %s, want still %s", p.Occurrence, occ)
	}
	if err := first.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	l, err := eb.Acquire(t.Context(), WaitOptions{NoWait: true, ReadFirst: true, Schedule: next})
	if err != nil {
		t.Fatalf("after the earlier run: %v, want the next occurrence to run", err)
	}
	if !l.Occurrence.Equal(next.occ) {
		t.Errorf("occurrence %s, want %s", l.Occurrence, next.occ)
	}
	_ = l.Release(t.Context())
}
