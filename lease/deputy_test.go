package lease

// The deputy (deputy.go) against the in-memory model of the Blob service,
// in a synctest bubble: who takes the place, how fast the deputy takes the
// lease over, what each follower costs, and when the place is given up.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
)

// deputyElector is an elector of lease name for client, with the lease's
// pause marker and deputy's place, polling every poll.
func deputyElector(t *testing.T, svc *blobsim.Service, client, name string, poll time.Duration) *Elector {
	t.Helper()
	c := blobsimContainer(t, svc, client)
	b, err := c.Blob(name)
	if err != nil {
		t.Fatal(err)
	}
	if b.marker, err = c.Blob(PauseBlob(name)); err != nil {
		t.Fatal(err)
	}
	if b.deputy, err = c.Blob(DeputyBlob(name)); err != nil {
		t.Fatal(err)
	}
	e, err := NewElector(b, Config{Duration: 15 * time.Second, KillGrace: 10 * time.Second, PollInterval: poll, Identity: client, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// requestCounts counts the requests the service applies, by client, op and
// blob ("b getProperties job~deputy").
type requestCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func countRequests(svc *blobsim.Service) *requestCounts {
	c := &requestCounts{n: map[string]int{}}
	svc.OnApply(func(a blobsim.Applied) {
		c.mu.Lock()
		c.n[a.Client+" "+a.Op+" "+a.Blob]++
		c.mu.Unlock()
	})
	return c
}

func (c *requestCounts) get(client, op, blob string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[client+" "+op+" "+blob]
}

func (c *requestCounts) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = map[string]int{}
}

// acquired is what a follower's Acquire returned, and when.
type acquired struct {
	l   *Lease
	err error
	at  time.Time
}

// follow runs e's Acquire in the background.
func follow(ctx context.Context, e *Elector, w WaitOptions) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := e.Acquire(ctx, w)
		ch <- acquired{l, err, time.Now()}
	}()
	return ch
}

// placeHolder is who the service says holds the deputy's place of name: ""
// if nobody does.
func placeHolder(svc *blobsim.Service, name string) string {
	b, ok := svc.Blob("leases", DeputyBlob(name))
	if !ok || b.State != blobsim.Leased {
		return ""
	}
	return b.Metadata[mdDeputyHolder]
}

// A graceful handover to the deputy takes at most one of its polls (250 ms
// + 20 %), wherever the release falls in its polling; a follower without
// the place takes up to one of its own (2 s + 20 %).
func TestDeputyTakesOverWithinItsPoll(t *testing.T) {
	for _, tc := range []struct {
		name   string
		deputy time.Duration
		within time.Duration
	}{
		{"deputy", DefaultDeputyPoll, DefaultDeputyPoll * 6 / 5},
		{"no deputy", 0, 2 * time.Second * 6 / 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := blobsim.New()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var slowest time.Duration
				for i := range 12 {
					holder := deputyElector(t, svc, fmt.Sprintf("h%d", i), "job", 2*time.Second)
					l, err := holder.Acquire(ctx, WaitOptions{NoWait: true})
					if err != nil {
						t.Fatal(err)
					}
					l.Keep(ctx)
					got := follow(ctx, deputyElector(t, svc, fmt.Sprintf("f%d", i), "job", 2*time.Second), WaitOptions{Deputy: tc.deputy})
					time.Sleep(3*time.Second + time.Duration(i)*173*time.Millisecond) // the release at another phase each time
					if tc.deputy > 0 && placeHolder(svc, "job") != fmt.Sprintf("f%d", i) {
						t.Fatalf("the deputy's place is held by %q, want f%d", placeHolder(svc, "job"), i)
					}
					released := time.Now()
					if err := l.Release(ctx); err != nil {
						t.Fatal(err)
					}
					a := <-got
					if a.err != nil {
						t.Fatal(a.err)
					}
					slowest = max(slowest, a.at.Sub(released))
					if err := a.l.Release(ctx); err != nil {
						t.Fatal(err)
					}
					if h := placeHolder(svc, "job"); h != "" {
						t.Fatalf("the deputy's place is still held by %q once its deputy led", h)
					}
				}
				if slowest > tc.within {
					t.Errorf("the slowest handover took %v, want at most %v", slowest, tc.within)
				}
				if tc.deputy > 0 && slowest > 2*time.Second/2 {
					t.Errorf("the deputy took over in %v: no faster than a follower's poll", slowest)
				}
			})
		})
	}
}

// What each follower asks of the service while the lease is held: the
// deputy reads the lease every 250 ms and renews its place every 5 s; any
// other follower reads the lease every poll and the place every 15 s.
func TestDeputyCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		n := countRequests(svc)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		l, err := deputyElector(t, svc, "a", "job", 2*time.Second).Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		l.Keep(ctx)
		b := follow(ctx, deputyElector(t, svc, "b", "job", 2*time.Second), WaitOptions{Deputy: DefaultDeputyPoll})
		time.Sleep(time.Second)
		c := follow(ctx, deputyElector(t, svc, "c", "job", 2*time.Second), WaitOptions{Deputy: DefaultDeputyPoll})
		time.Sleep(10 * time.Second)
		n.reset()
		const window = 10 * time.Minute
		time.Sleep(window)
		polls := func(every time.Duration) int { return int(window / every) }
		near := func(got, want int) bool { return got >= want*8/10 && got <= want*12/10 }
		for _, r := range []struct {
			client, op, blob string
			want             int
		}{
			{"b", blobsim.OpGetProperties, "job", polls(DefaultDeputyPoll)},
			{"b", blobsim.OpRenew, "job~deputy", polls(5 * time.Second)},
			{"b", blobsim.OpGetProperties, "job~deputy", 0},
			{"c", blobsim.OpGetProperties, "job", polls(2 * time.Second)},
			{"c", blobsim.OpGetProperties, "job~deputy", polls(placeRecheck)},
			{"c", blobsim.OpAcquire, "job~deputy", 0},
			{"c", blobsim.OpAcquire, "job", 0},
		} {
			if got := n.get(r.client, r.op, r.blob); (r.want == 0 && got != 0) || !near(got, r.want) {
				t.Errorf("%s made %d %s requests on %s in %v, want about %d", r.client, got, r.op, r.blob, window, r.want)
			}
		}
		if got, lease := n.get("c", blobsim.OpGetProperties, "job~deputy"), n.get("c", blobsim.OpGetProperties, "job"); got > lease {
			t.Errorf("a follower read the place %d times in %d polls: more than once per poll", got, lease)
		}
		cancel()
		<-b
		<-c
	})
}

// After a handover the deputy leads and its place is free: the other
// follower, seeing the term change at its next poll, takes the place then,
// not a recheck later.
func TestDeputyReplacedAfterAHandover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		l, err := deputyElector(t, svc, "a", "job", 2*time.Second).Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		l.Keep(ctx)
		b := follow(ctx, deputyElector(t, svc, "b", "job", 2*time.Second), WaitOptions{Deputy: DefaultDeputyPoll})
		time.Sleep(time.Second)
		c := follow(ctx, deputyElector(t, svc, "c", "job", 2*time.Second), WaitOptions{Deputy: DefaultDeputyPoll})
		time.Sleep(5 * time.Second)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-b
		if got.err != nil {
			t.Fatal(got.err)
		}
		got.l.Keep(ctx)
		time.Sleep(2 * time.Second * 6 / 5) // c's next poll: the new term
		if h := placeHolder(svc, "job"); h != "c" {
			t.Errorf("the place is held by %q a poll after the handover, want c", h)
		}
		cancel()
		<-c
	})
}

// The deputy gives its place up when its Acquire ends without the lease:
// a stop request, or its timeout; and the next follower takes it.
func TestDeputyGivesItsPlaceUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		w       WaitOptions
		stop    bool
		wantErr func(error) bool
	}{
		{"stop request", WaitOptions{Deputy: DefaultDeputyPoll}, true, func(err error) bool { return errors.Is(err, context.Canceled) }},
		{"timeout", WaitOptions{Deputy: DefaultDeputyPoll, Timeout: 5 * time.Second}, false, func(err error) bool { return errors.Is(err, ErrHeld) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := blobsim.New()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				l, err := deputyElector(t, svc, "a", "job", 2*time.Second).Acquire(ctx, WaitOptions{NoWait: true})
				if err != nil {
					t.Fatal(err)
				}
				l.Keep(ctx)
				bctx, stop := context.WithCancel(ctx)
				defer stop()
				b := follow(bctx, deputyElector(t, svc, "b", "job", 2*time.Second), tc.w)
				time.Sleep(time.Second)
				if h := placeHolder(svc, "job"); h != "b" {
					t.Fatalf("the place is held by %q, want b", h)
				}
				c := follow(ctx, deputyElector(t, svc, "c", "job", 2*time.Second), WaitOptions{Deputy: DefaultDeputyPoll})
				if tc.stop {
					time.Sleep(time.Second)
					stop()
				}
				got := <-b
				if !tc.wantErr(got.err) {
					t.Fatalf("Acquire: %v", got.err)
				}
				if h := placeHolder(svc, "job"); h != "" {
					t.Errorf("the place is held by %q once its deputy stopped waiting", h)
				}
				time.Sleep(placeRecheck*6/5 + 2500*time.Millisecond) // c's next look at the place
				if h := placeHolder(svc, "job"); h != "c" {
					t.Errorf("the place is held by %q a recheck after it was given up, want c", h)
				}
				cancel()
				<-c
			})
		})
	}
}

// A deputy cut off from the service loses its place when its renewals
// fail (its keeper's rule), and another follower takes it once the
// service lets it go; the cut-off one, back, waits as an ordinary
// follower.
func TestDeputyCutOffLosesItsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		var cut atomic.Bool
		svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			return blobsim.Plan{Unreachable: r.Client == "b" && cut.Load()}
		}))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		l, err := deputyElector(t, svc, "a", "job", 2*time.Second).Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		l.Keep(ctx)
		var deputy atomic.Int32 // b's OnDeputy: +1 taken, −1 lost
		b := follow(ctx, deputyElector(t, svc, "b", "job", 2*time.Second), WaitOptions{Deputy: DefaultDeputyPoll,
			OnDeputy: func(standing bool) {
				if standing {
					deputy.Add(1)
				} else {
					deputy.Add(-1)
				}
			}})
		time.Sleep(time.Second)
		c := follow(ctx, deputyElector(t, svc, "c", "job", 2*time.Second), WaitOptions{Deputy: DefaultDeputyPoll})
		time.Sleep(time.Second)
		cut.Store(true)
		time.Sleep(MinDuration + placeRecheck*6/5 + 3*time.Second) // the place's lease runs out; c's next look at it
		if h := placeHolder(svc, "job"); h != "c" {
			t.Errorf("the place is held by %q after its deputy was cut off, want c", h)
		}
		cut.Store(false)
		// b learns it lost the place at its first poll once back: its read
		// of the lease may still be in its retries (their backoff), up to
		// the storage timeout.
		for range 60 {
			if deputy.Load() == 0 {
				break
			}
			time.Sleep(time.Second)
		}
		if h := placeHolder(svc, "job"); h != "c" {
			t.Errorf("the place is held by %q, want c still", h)
		}
		if got := deputy.Load(); got != 0 {
			t.Errorf("b's OnDeputy says %d a minute after it is back (1: still the deputy)", got)
		}
		cancel()
		<-b
		<-c
	})
}

// A follower that is not ready takes neither the place nor the lease, even
// free; Ready is asked once per poll; ready again, it takes both. A deputy
// that turns unready gives its place up.
func TestDeputyNotReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		n := countRequests(svc)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		l, err := deputyElector(t, svc, "a", "job", 2*time.Second).Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		l.Keep(ctx)
		var ready atomic.Bool
		var asked atomic.Int32
		b := follow(ctx, deputyElector(t, svc, "b", "job", 2*time.Second), WaitOptions{Deputy: DefaultDeputyPoll,
			Ready: func(context.Context) string {
				asked.Add(1)
				if ready.Load() {
					return ""
				}
				return "not ready: exit status 1"
			}})
		time.Sleep(10 * time.Second)
		if h := placeHolder(svc, "job"); h != "" {
			t.Errorf("the place is held by %q while b is not ready", h)
		}
		if got, polls := int(asked.Load()), n.get("b", blobsim.OpGetProperties, "job"); got > polls+1 {
			t.Errorf("Ready was asked %d times in %d polls", got, polls)
		}
		ready.Store(true)
		time.Sleep(3 * time.Second)
		if h := placeHolder(svc, "job"); h != "b" {
			t.Errorf("the place is held by %q once b is ready, want b", h)
		}
		ready.Store(false)
		time.Sleep(time.Second)
		if h := placeHolder(svc, "job"); h != "" {
			t.Errorf("the place is held by %q once its deputy is not ready", h)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		select {
		case got := <-b:
			t.Fatalf("b acquired while not ready: %v", got.err)
		default:
		}
		if got := n.get("b", blobsim.OpAcquire, "job"); got != 0 {
			t.Errorf("b sent %d acquires while not ready, want none (not even the optimistic one)", got)
		}
		ready.Store(true)
		got := <-b
		if got.err != nil {
			t.Fatal(got.err)
		}
		if err := got.l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// With --no-wait, a contender that is not ready sends nothing and gives up
// with the reason.
func TestNotReadyNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		n := countRequests(svc)
		_, err := deputyElector(t, svc, "b", "job", 2*time.Second).Acquire(t.Context(), WaitOptions{NoWait: true,
			Ready: func(context.Context) string { return "not ready: exit status 3" }})
		var he *HeldError
		if !errors.As(err, &he) || he.Reason != "not ready: exit status 3" {
			t.Fatalf("Acquire: %v, want a *HeldError with the reason", err)
		}
		if len(n.n) != 0 {
			t.Errorf("requests sent: %v", n.n)
		}
	})
}
