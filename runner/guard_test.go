//go:build unix

package runner

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestGuardCatchesEverySignal sends every signal that can be caught to a
// prepared guard's group, the guard alone until the go-ahead (as in the
// instant after the command's start, before the guard leaves the group):
// the guard must survive them all, none stopping it, and then start the
// command. A Go program dies of many (SIGABRT, SIGSYS, SIGTRAP, SIGILL...).
func TestGuardCatchesEverySignal(t *testing.T) {
	t.Parallel()
	pr := prepareChild(t, Config{})
	guard := pr.prep.proc.pgid
	waitAwaitingLaunch(t, guard) // its handlers are in place
	for sig := syscall.Signal(1); sig < 32; sig++ {
		if sig == syscall.SIGKILL || sig == syscall.SIGSTOP {
			continue
		}
		if err := unix.Kill(-guard, sig); err != nil {
			t.Fatalf("%v: %v", sig, err)
		}
	}
	pr.launch(t, "RUNNER_TEST_CHILD=exit", "RUNNER_TEST_CODE=7")
	if res := pr.wait(t); res != (Result{ExitCode: 7}) {
		t.Errorf("Result = %+v, want the command's exit 7 (the guard did not survive the signals)", res)
	}
}

// TestGuardLeavesTheGroup: once the command has started, the guard is in
// neither the command's group (which a signal to the group as a whole,
// SIGKILL included, must not reach) nor leaderrun's (which a kill of
// leaderrun's job as a whole reaches), while the command is in its group.
func TestGuardLeavesTheGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=fork",
		"RUNNER_TEST_PIDFILE="+filepath.Join(dir, "grand"), "RUNNER_TEST_CMD_PIDFILE="+filepath.Join(dir, "cmd"))
	r.expect(t, "ready")
	pgid := r.p.Pid()
	cmd := readPid(t, filepath.Join(dir, "cmd"))
	if pg, err := unix.Getpgid(cmd); err != nil || pg != pgid {
		t.Errorf("the command is in group %d (%v), want %d", pg, err, pgid)
	}
	pg, err := unix.Getpgid(pgid)
	if err != nil {
		t.Fatal(err)
	}
	if pg == pgid || pg == unix.Getpgrp() {
		t.Errorf("the guard is in group %d: the command's is %d, leaderrun's %d", pg, pgid, unix.Getpgrp())
	}
	// The group as a whole, SIGKILL: the command goes, the guard reports it.
	if err := unix.Kill(-pgid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if res := r.wait(t); res != (Result{ExitCode: -1, Signal: syscall.SIGKILL}) {
		t.Errorf("Result = %+v, want the command killed by SIGKILL", res)
	}
}
