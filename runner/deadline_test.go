//go:build unix

package runner

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The guard enforces the kill deadline by itself: here nothing but the
// deadline stops the command, as when leaderrun is frozen (SIGSTOP).
func TestGuardKillsAtDeadline(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "grand")
	r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=fork", "RUNNER_TEST_PIDFILE="+pidfile, "RUNNER_TEST_IGNORE_TERM=1")
	r.expect(t, "ready")
	grand := readPid(t, pidfile)
	deadline := time.Now().Add(300 * time.Millisecond)
	if err := r.p.SetKillDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	res := r.wait(t)
	if res.Signal != syscall.SIGKILL {
		t.Errorf("Result = %+v, want killed by SIGKILL", res)
	}
	if early := time.Until(deadline); early > 0 {
		t.Errorf("killed %v before the deadline", early)
	}
	if !gone(grand) {
		t.Errorf("grandchild %d still runs", grand)
	}
}

// A deadline long past, the zero time included, kills at once: its
// reading on the monotonic clock cannot wrap into the future.
func TestGuardKillsAtZeroDeadline(t *testing.T) {
	t.Parallel()
	r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=sleep", "RUNNER_TEST_IGNORE_TERM=1")
	r.expect(t, "ready")
	if err := r.p.SetKillDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if res := r.wait(t); res.Signal != syscall.SIGKILL {
		t.Errorf("Result = %+v, want killed by SIGKILL", res)
	}
}

// A later deadline replaces an earlier one: renewals keep the command alive.
func TestGuardDeadlineMovesForward(t *testing.T) {
	t.Parallel()
	r := startChild(t, Config{}, "RUNNER_TEST_CHILD=sleep")
	r.expect(t, "ready")
	first := time.Now().Add(time.Second)
	if err := r.p.SetKillDeadline(first); err != nil {
		t.Fatal(err)
	}
	if err := r.p.SetKillDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Past the first deadline by a wide margin, the command still runs.
	select {
	case <-r.p.Done():
		t.Fatalf("the command ended at the replaced deadline: %+v", r.p.Result())
	case <-time.After(time.Until(first) + 2*time.Second):
	}
	r.p.Stop(0)
	if res := r.wait(t); res.Signal != syscall.SIGKILL {
		t.Errorf("Result = %+v", res)
	}
	if err := r.p.SetKillDeadline(time.Now()); err != nil {
		t.Errorf("after the group has gone: %v", err)
	}
}
