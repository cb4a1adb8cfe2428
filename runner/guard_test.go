//go:build unix

package runner

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGuardCatchesEverySignal sends every signal that can be caught to a
// prepared guard's group, the guard alone until the go-ahead:
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
