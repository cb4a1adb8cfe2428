package lease

// retry.go: how lease waits and retries, each written once: the backoffs,
// the run of failures, the retry loop for one request, and the wait that
// ends when a channel closes. The acquire's poll loop and the keeper use
// them around deadlines of their own.

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// asStorageError returns the *StorageError in err's chain, or nil.
func asStorageError(err error) *StorageError {
	var se *StorageError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

// denied reports whether err is a 401 or 403 *StorageError.
func denied(err error) bool {
	se := asStorageError(err)
	return se != nil && (se.StatusCode == http.StatusForbidden || se.StatusCode == http.StatusUnauthorized)
}

// renamed names a failed request by what it was for ("write pause marker"),
// not what it is to the service ("put blob"). nil stays nil.
func renamed(err error, op string) error {
	if se := asStorageError(err); se != nil {
		se.Op = op
	}
	return err
}

// dice draws the random parts of one Elector's waits and of its leases':
// jitter, full-jitter backoff, the order of the slots tried. It uses
// Config.Rand when set (a test's seed makes a run repeatable), else
// math/rand/v2's global source; a nil *dice is the global source.
type dice struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newDice(src rand.Source) *dice {
	if src == nil {
		return nil
	}
	return &dice{r: rand.New(src)}
}

// float64 is a random number in [0, 1).
func (d *dice) float64() float64 {
	if d == nil {
		return rand.Float64()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.Float64()
}

// below is a random duration in [0, n); n must be more than 0.
func (d *dice) below(n time.Duration) time.Duration {
	if d == nil {
		return rand.N(n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return time.Duration(d.r.Int64N(int64(n)))
}

// shuffle is rand.Shuffle on d's source.
func (d *dice) shuffle(n int, swap func(i, j int)) {
	if d == nil {
		rand.Shuffle(n, swap)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.r.Shuffle(n, swap)
}

// backoff is 200 ms doubling to 2 s, ±20 % jitter; n counts from 1.
func (d *dice) backoff(n int) time.Duration {
	return d.jitter(doubled(200*time.Millisecond, 2*time.Second, n), 0.2)
}

// doubled is base doubled n−1 times, at most limit.
func doubled(base, limit time.Duration, n int) time.Duration {
	for i := 1; i < n && base < limit; i++ {
		base *= 2
	}
	return min(base, limit)
}

// jitter is d ± frac·d, uniformly.
func (d *dice) jitter(dur time.Duration, frac float64) time.Duration {
	return time.Duration(float64(dur) * (1 - frac + 2*frac*d.float64()))
}

// fullJitter is the wait before a contender's nth retry (n counts from 1): a
// random time in [0, cap), cap doubling from 500 ms to 8 s: a fleet
// throttled together spreads out, well within a minute of budget.
func (d *dice) fullJitter(n int) time.Duration {
	return d.below(doubled(500*time.Millisecond, 8*time.Second, n))
}

// failureRun counts consecutive failed tries; a success ends the run (reset).
type failureRun struct {
	n     int       // failures in the run
	since time.Time // when the run's first failed request was sent
}

// add counts a failed try sent at sent, and returns backoff(n).
func (f *failureRun) add(sent time.Time, d *dice) time.Duration {
	f.count(sent)
	return d.backoff(f.n)
}

func (f *failureRun) count(sent time.Time) {
	if f.n == 0 {
		f.since = sent
	}
	f.n++
}

func (f *failureRun) reset() { *f = failureRun{} }

// retryTransient calls try with ctx bounded to timeout from now (try bounds
// its request by it) until it returns anything but a transient *StorageError
// or that ctx ends, waiting backoff(n) (drawn from d) after the nth failure;
// it returns try's last error.
func retryTransient(ctx context.Context, d *dice, timeout time.Duration, try func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var run failureRun
	for {
		err := try(ctx)
		if se := asStorageError(err); se == nil || !se.Transient() || ctx.Err() != nil {
			return err
		}
		if waitFor(ctx.Done(), run.add(time.Time{}, d)) {
			return err
		}
	}
}

// waitFor waits d, or less if done closes first, and reports whether done
// closed. A done already closed wins, even over a d that has passed.
func waitFor(done <-chan struct{}, d time.Duration) (closed bool) {
	select {
	case <-done:
		return true
	default:
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
