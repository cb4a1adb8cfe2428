//go:build unix && !linux

package runner

import (
	"testing"
	"time"
)

// waitAwaitingLaunch gives the prepared guard time to settle: outside Linux
// the test cannot see the guard's system calls.
func waitAwaitingLaunch(tb testing.TB, pid int) {
	tb.Helper()
	time.Sleep(50 * time.Millisecond)
}
