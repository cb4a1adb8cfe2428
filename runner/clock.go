//go:build unix

// The system-wide monotonic clock, which leaderrun and the guard share: the
// kill deadline travels between them as one of its readings, in nanoseconds.

package runner

import (
	"time"

	"golang.org/x/sys/unix"
)

func monotonicNow() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// monotonicAt is t as a reading of the system's monotonic clock.
func monotonicAt(t time.Time) (int64, error) {
	now, err := monotonicNow()
	if err != nil {
		return 0, err
	}
	return now + int64(time.Until(t)), nil
}

// untilMonotonic is how long until a system monotonic clock reading.
func untilMonotonic(at int64) time.Duration {
	now, err := monotonicNow()
	if err != nil {
		return 0
	}
	return time.Duration(at - now)
}
