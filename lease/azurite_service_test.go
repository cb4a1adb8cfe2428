package lease

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	azlease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
)

// The service's hard answers, played by the fault proxy in front of the
// emulator: writes applied with their answer lost, and throttling per blob.

// ageRuns moves the recorded run of blob an hour back, so that a once-per
// window is open again; the blob must not be leased.
func ageRuns(t *testing.T, cs, containerName, blobName string) {
	t.Helper()
	b := sdkBlob(t, cs, containerName, blobName)
	props, err := b.GetProperties(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	md := map[string]*string{}
	for k, v := range props.Metadata {
		md[strings.ToLower(k)] = v
	}
	hourAgo := formatTime(time.Now().Add(-time.Hour))
	for _, k := range []string{mdLastRunStart, mdLastRunEnd, mdAcquiredAt} {
		if md[k] != nil {
			md[k] = &hourAgo
		}
	}
	if _, err := b.SetMetadata(t.Context(), md, nil); err != nil {
		t.Fatal(err)
	}
}

// ranAnHourAgo makes a lease blob "report" behind a fault proxy with term 1
// and a finished run, an hour's window ago for no one, and returns the
// proxy, the configuration through it and a client of the blob.
func ranAnHourAgo(t *testing.T, cs string) (*faultproxy.Proxy, ClientConfig, *Blob) {
	t.Helper()
	ctx := t.Context()
	proxy, pcs := faultproxy.Start(t, cs)
	cfg := ClientConfig{ConnectionString: pcs, Container: uniqueContainer(t), Blob: "report"}
	c := azuriteBlob(t, cfg)
	l, err := azuriteElector(t, c, "vm-a", nil).Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RecordRunEnd(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	ageRuns(t, cs, cfg.Container, cfg.Blob)
	return proxy, cfg, c
}

// A claim, an end record and a release whose answers are lost (a 500 after
// the write was applied, or no answer at all): the holder recognises its
// own claim, runs once with the term up by exactly one, the once-per window
// is not burnt by its own start, and the history shows one run that ended
// with its status — no phantom.
func TestAzuriteLostAnswers(t *testing.T) {
	cs := azuriteConnectionString(t)
	for _, tc := range []struct {
		name   string
		status int
		code   string
	}{
		{"500 OperationTimedOut", http.StatusInternalServerError, "OperationTimedOut"},
		{"500 InternalError", http.StatusInternalServerError, ""},
		{"no answer", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			proxy, cfg, c := ranAnHourAgo(t, cs)

			lose := func(op string) {
				proxy.Set(faultproxy.Mode{LoseAnswer: faultproxy.LoseAnswer{Op: op, Count: 1, Status: tc.status, Code: tc.code}})
			}
			lose(faultproxy.OpSetMetadata)
			eb := azuriteElector(t, azuriteBlob(t, cfg), "vm-b", nil)
			l, err := eb.Acquire(ctx, WaitOptions{NoWait: true, OncePer: 4 * time.Minute})
			if err != nil {
				t.Fatalf("Acquire after a lost claim answer: %v, want our own claim to stand", err)
			}
			if got := proxy.Counts().Lost; got != 1 {
				t.Fatalf("answers lost: %d, want 1", got)
			}
			if l.Term != 2 {
				t.Errorf("term %d, want 2: up by exactly one", l.Term)
			}
			if err := l.RecordRunStart(ctx); err != nil {
				t.Fatal(err)
			}
			lose(faultproxy.OpSetMetadata)
			if err := l.RecordRunEnd(ctx, 3); err != nil {
				t.Errorf("RecordRunEnd after a lost answer: %v", err)
			}
			lose(faultproxy.OpRelease)
			if err := l.Release(ctx); err != nil {
				t.Errorf("Release after a lost answer: %v", err)
			}
			proxy.Set(faultproxy.Mode{})

			p := mustProps(t, c)
			if p.State == StateLeased || p.Term != 2 || p.Holder != "vm-b" || p.LastRun == nil ||
				p.LastRun.ExitCode == nil || *p.LastRun.ExitCode != 3 {
				t.Errorf("after the run: %+v (last run %+v), want released, term 2, vm-b's run with exit 3", p, p.LastRun)
			}
			ours := 0
			for _, r := range ReadHistory(p.Metadata, false) {
				if r.EndUnknown() {
					t.Errorf("history shows a run that never happened: %+v", r)
				}
				if r.Holder == "vm-b" {
					ours++
					if r.ExitCode == nil || *r.ExitCode != 3 {
						t.Errorf("vm-b's run in the history: %+v, want exit 3", r)
					}
				}
			}
			if ours != 1 {
				t.Errorf("vm-b's run is in the history %d times, want once", ours)
			}
		})
	}
}

// A fleet behind a per-blob limit far below its burst (503 ServerBusy, or
// 500 OperationTimedOut, beyond it): exactly one contender runs, none gives
// up with a storage error, and every loser stops at its first real answer.
func TestAzuriteThrottledFleet(t *testing.T) {
	cs := azuriteConnectionString(t)
	for _, tc := range []struct {
		name   string
		status int
		code   string
	}{
		{"503 ServerBusy", 0, ""},
		{"500 OperationTimedOut", http.StatusInternalServerError, "OperationTimedOut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const contenders = 30
			proxy, pcs := faultproxy.Start(t, cs)
			cfg := ClientConfig{ConnectionString: pcs, Container: uniqueContainer(t), Blob: "report"}
			// The blob exists, as on every run but a lease's first.
			l, err := azuriteElector(t, azuriteBlob(t, cfg), "setup", nil).Acquire(t.Context(), WaitOptions{NoWait: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
			ageRuns(t, cs, cfg.Container, cfg.Blob) // the window is open
			proxy.ResetCounts()
			proxy.Set(faultproxy.Mode{Throttle: faultproxy.Throttle{Rate: 10, Burst: 10, Status: tc.status, Code: tc.code}})

			var (
				wg                 sync.WaitGroup
				mu                 sync.Mutex
				ran, skipped, held int
				failures           []error
			)
			start := make(chan struct{})
			for i := range contenders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := azuriteBlob(t, cfg)
					e := azuriteElector(t, c, "vm-"+string(rune('a'+i%26))+string(rune('0'+i/26)), nil)
					<-start
					l, err := e.Acquire(t.Context(), WaitOptions{NoWait: true, OncePer: time.Minute, StorageTimeout: time.Minute})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						ran++
						// The run ends while the others are still at it:
						// the window keeps them from a second run.
						mu.Unlock()
						_ = l.RecordRunEnd(context.WithoutCancel(t.Context()), 0)
						_ = l.Release(context.WithoutCancel(t.Context()))
						mu.Lock()
					case errors.Is(err, ErrSkipped):
						skipped++
					case errors.Is(err, ErrHeld):
						held++
					default:
						failures = append(failures, err)
					}
				}()
			}
			t0 := time.Now()
			close(start)
			wg.Wait()
			d := time.Since(t0)
			n := proxy.Counts()
			t.Logf("%d contenders, 10 requests/s per blob: ran %d, skipped %d, held %d, failed %d; %d requests (%d throttled), %.1f per contender, %v",
				contenders, ran, skipped, held, len(failures), n.Reads+n.Writes, n.Throttled, float64(n.Reads+n.Writes)/contenders, d.Round(time.Millisecond))
			if ran != 1 {
				t.Errorf("ran %d times, want exactly 1", ran)
			}
			if len(failures) > 0 {
				t.Errorf("%d contenders gave up on throttling, first: %v", len(failures), failures[0])
			}
			if n.Throttled == 0 {
				t.Errorf("nothing was throttled: the test proves nothing")
			}
		})
	}
}

// An operator's break while a new holder's claim is still on its way, the
// new holder on a 60 s lease after one on 15 s (so the metadata still says
// 15): break sends no period, the service keeps the lease until the new
// holder's own period ends, and the holder learns of the break and stops
// long before anyone else can acquire.
func TestAzuriteBreakDuringClaim(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	proxy, pcs := faultproxy.Start(t, cs)
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "report"}
	direct := azuriteBlob(t, cfg)
	l, err := azuriteElector(t, direct, "vm-15s", nil).Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// vm-60s's requests are slow: its claim is still in flight when the
	// operator looks.
	proxy.Set(faultproxy.Mode{Latency: 700 * time.Millisecond})
	pcfg := cfg
	pcfg.ConnectionString = pcs
	e60 := azuriteElector(t, azuriteBlob(t, pcfg), "vm-60s", func(c *Config) {
		c.Duration, c.RenewInterval = 60*time.Second, 2*time.Second
	})
	type result struct {
		l   *Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := e60.Acquire(ctx, WaitOptions{NoWait: true})
		got <- result{l, err}
	}()
	var p *Properties
	for p = mustProps(t, direct); p.State != StateLeased; p = mustProps(t, direct) {
		time.Sleep(20 * time.Millisecond)
	}
	if p.LeaseDuration != 15*time.Second || p.Holder != "vm-15s" {
		t.Fatalf("the test needs the claim in flight: read %+v", p)
	}
	broke := time.Now()
	freeIn, err := direct.BreakLease(ctx, BreakAtPeriodEnd)
	if err != nil {
		t.Fatal(err)
	}
	if freeIn < 50*time.Second {
		t.Errorf("the service frees the lease in %v, want the new holder's 60 s period", freeIn)
	}
	free := broke.Add(freeIn)
	if _, err := azuriteElector(t, direct, "vm-c", nil).Acquire(ctx, WaitOptions{NoWait: true}); !errors.Is(err, ErrHeld) {
		t.Errorf("acquire right after the break: %v, want ErrHeld", err)
	}
	r := <-got
	if r.err != nil {
		// Refused before it ran: nothing to stop.
		t.Logf("the new holder did not claim: %v", r.err)
		return
	}
	proxy.Set(faultproxy.Mode{})
	r.l.Keep(ctx)
	select {
	case <-r.l.Lost():
		lost := time.Now()
		t.Logf("lease free %v after the break; the holder knew it lost after %v (%v)",
			freeIn, lost.Sub(broke).Round(time.Millisecond), r.l.LostErr())
		if !lost.Before(free.Add(-r.l.StopBudget)) {
			t.Errorf("the holder learnt of the break at %v, too late to stop before %v", lost, free)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the holder did not learn of the break within 20 s")
	}
	_ = r.l.Release(context.WithoutCancel(ctx))
}

// pause and resume whose answers are lost: the pause is in force and
// reported written, the resume is reported as done, not as "not paused".
func TestAzuriteLostPauseAnswers(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	proxy, pcs := faultproxy.Start(t, cs)
	c := azuriteBlob(t, ClientConfig{ConnectionString: pcs, Container: uniqueContainer(t), Blob: "report"})
	if _, err := c.WritePause(ctx, Pause{Reason: "first"}); err != nil { // creates the container
		t.Fatal(err)
	}
	proxy.Set(faultproxy.Mode{LoseAnswer: faultproxy.LoseAnswer{Op: faultproxy.OpCreateBlob, Path: "~pause", Count: 1, Status: http.StatusInternalServerError, Code: "OperationTimedOut"}})
	if _, err := c.WritePause(ctx, Pause{Reason: "patching"}); err != nil {
		t.Fatalf("WritePause after a lost answer: %v", err)
	}
	if p, _, err := c.ReadPause(ctx); err != nil || p == nil || p.Reason != "patching" {
		t.Fatalf("ReadPause: %+v, %v; want the pause written", p, err)
	}
	proxy.Set(faultproxy.Mode{LoseAnswer: faultproxy.LoseAnswer{Op: faultproxy.OpOther, Path: "~pause", Count: 1, Status: 0}})
	existed, err := c.DeletePause(ctx)
	if err != nil || !existed {
		t.Fatalf("DeletePause after a lost answer: existed %v, %v; want true, nil", existed, err)
	}
	if n := proxy.Counts().Lost; n != 2 {
		t.Errorf("answers lost: %d, want 2", n)
	}
	if p, _, err := c.ReadPause(ctx); err != nil || p != nil {
		t.Errorf("ReadPause after resume: %+v, %v; want none", p, err)
	}
}

// The lease blob deleted under its holder: the holder learns at its next
// renewal and stops; a waiting follower creates the blob again only after
// the holder's lease duration, and its term continues from the holder's.
func TestAzuriteStorageLostUnderTheLeader(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "report"}
	holder, err := azuriteElector(t, azuriteBlob(t, cfg), "vm-a", nil).Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	holder.Keep(ctx)
	type result struct {
		l   *Lease
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	eb := azuriteElector(t, azuriteBlob(t, cfg), "vm-b", func(c *Config) { c.PollInterval = 200 * time.Millisecond })
	seen := make(chan struct{})
	var once sync.Once
	go func() {
		l, err := eb.Acquire(ctx, WaitOptions{OnWait: func(*Properties) { once.Do(func() { close(seen) }) }})
		got <- result{l, err, time.Now()}
	}()
	<-seen // the follower has seen the lease held
	b := sdkBlob(t, cs, cfg.Container, cfg.Blob)
	if _, err := b.Delete(ctx, &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{
		LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: &holder.ID}}}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	var lostAt time.Time
	select {
	case <-holder.Lost():
		lostAt = time.Now()
	case <-time.After(15 * time.Second):
		t.Fatal("the holder did not learn that its blob is gone")
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("deleted; holder lost it after %v; follower took over after %v",
		lostAt.Sub(deleted).Round(time.Millisecond), r.at.Sub(deleted).Round(time.Millisecond))
	if r.at.Sub(deleted) < 15*time.Second {
		t.Errorf("the follower created the blob again %v after it was deleted, before the holder's 15 s lease", r.at.Sub(deleted))
	}
	if r.l.Term != holder.Term+1 {
		t.Errorf("term %d after the holder's %d, want it continued", r.l.Term, holder.Term)
	}
	_ = holder.Release(ctx)
	_ = r.l.Release(ctx)
}

// A claim that landed but whose answer, and the read back, were lost, on a
// machine so slow that the lease lapsed meanwhile: another contender of the
// same cron tick takes the lease, finds our claim (a run started within
// the window) and skips. Ours, back with the same lease ID, finds the lease
// held: under --no-wait -E 0 -q it must not give up as the other losers do,
// or nobody runs this window. It waits for the skipping holder to let go
// and adopts its own claim: one run, the term up by one.
func TestAzuriteLostClaimFoundHeld(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	proxy, cfg, c := ranAnHourAgo(t, cs)

	// The claim is applied and its answer lost; then the service hangs,
	// so that the read back cannot tell before the claim's deadline.
	proxy.Set(faultproxy.Mode{LoseAnswer: faultproxy.LoseAnswer{Op: faultproxy.OpSetMetadata, Count: 1, Status: http.StatusInternalServerError}})
	go func() {
		for proxy.Counts().Lost == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		proxy.Set(faultproxy.Mode{BlackHole: true})
	}()
	other := sdkBlob(t, cs, cfg.Container, cfg.Blob)
	tries := 0
	var released sync.WaitGroup
	onTry := func() {
		tries++
		if tries != 2 {
			return
		}
		// Before our second acquire: our lease lapsed (broken here at
		// once) and another contender took it, found our claim and is
		// about to let go.
		proxy.Set(faultproxy.Mode{})
		bl, err := azlease.NewBlobClient(other, nil)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := bl.BreakLease(ctx, &azlease.BlobBreakOptions{BreakPeriod: to.Ptr(int32(0))}); err != nil {
			t.Error(err)
		}
		if _, err := bl.AcquireLease(ctx, 15, nil); err != nil {
			t.Error(err)
			return
		}
		released.Go(func() {
			time.Sleep(time.Second)
			if _, err := bl.ReleaseLease(ctx, nil); err != nil {
				t.Error(err)
			}
		})
	}
	eb := azuriteElector(t, azuriteBlob(t, cfg), "vm-b", func(c *Config) { c.PollInterval = 200 * time.Millisecond })
	l, err := eb.Acquire(ctx, WaitOptions{NoWait: true, HeldIsEnough: true, OncePer: 4 * time.Minute, OnTry: onTry})
	released.Wait()
	if err != nil {
		t.Fatalf("Acquire after our claim landed unanswered and the lease was found held: %v; want our own claim adopted", err)
	}
	if tries < 3 {
		t.Errorf("acquires sent: %d, want the optimistic one, the one refused as held, and one after the holder let go", tries)
	}
	if l.Term != 2 {
		t.Errorf("term %d, want 2: our claim's, up by exactly one", l.Term)
	}
	if err := l.RecordRunStart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordRunEnd(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	p := mustProps(t, c)
	if p.LastRun == nil || p.LastRun.Holder != "vm-b" || p.LastRun.ExitCode == nil || *p.LastRun.ExitCode != 0 || p.Term != 2 {
		t.Errorf("after the run: term %d, last run %+v; want term 2 and vm-b's run, exit 0", p.Term, p.LastRun)
	}
}

// A service so slow that the claim ends close to the stop deadline (every
// answer 2.5 s late: the acquire, the reads sent with it, the claim's
// write end 7.5 s after the acquire was sent, 1 s before the stop
// deadline of a 15 s lease): the lease is renewed before it is handed
// over, so that COMMAND does not start on a lease it cannot renew in time.
func TestAzuriteSlowClaimRenewed(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	proxy, cfg, _ := ranAnHourAgo(t, cs)
	proxy.Set(faultproxy.Mode{Latency: 2500 * time.Millisecond})
	e := azuriteElector(t, azuriteBlob(t, cfg), "vm-b", nil)
	before := proxy.Counts().ByOp[faultproxy.OpRenew]
	l, err := e.Acquire(t.Context(), WaitOptions{NoWait: true, OncePer: 4 * time.Minute})
	proxy.Set(faultproxy.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(l.stopAt()); left < l.renewTry() {
		t.Errorf("handed over %v before the stop deadline, less than one renewal try (%v)", left, l.renewTry())
	}
	if n := proxy.Counts().ByOp[faultproxy.OpRenew] - before; n < 1 {
		t.Errorf("%d renewals, want the lease renewed before it is handed over", n)
	}
	if l.Term != 2 {
		t.Errorf("term %d, want 2", l.Term)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}
