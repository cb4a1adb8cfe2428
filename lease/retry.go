// retry.go: how lease waits and retries: the backoff between tries, the
// jitter, and the comparison of deadlines.

package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

func asStorageError(err error) *StorageError {
	var se *StorageError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

// backoff is 200 ms doubling to 2 s, ±20 % jitter; n counts from 1.
func backoff(n int) time.Duration {
	d := 200 * time.Millisecond
	for i := 1; i < n && d < 2*time.Second; i++ {
		d *= 2
	}
	return jitter(min(d, 2*time.Second), 0.2)
}

// jitter spreads d by ±frac.
func jitter(d time.Duration, frac float64) time.Duration {
	return time.Duration(float64(d) * (1 - frac + 2*frac*rand.Float64()))
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

// sleepUntil waits until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
