package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// awaitingLaunch reports whether a thread of the guard pid is blocked in a
// read of the launch pipe, from /proc/PID/task/TID/syscall ("NR ARG0 ...").
// It fails when the system does not show it (no such file, no permission).
func awaitingLaunch(pid int) (bool, error) {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return false, err
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/syscall")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread has just exited
			}
			return false, err
		}
		f := strings.Fields(string(b))
		if len(f) >= 2 && f[0] == strconv.Itoa(unix.SYS_READ) && f[1] == "0x"+strconv.FormatInt(launchFD, 16) {
			return true, nil
		}
	}
	return false, nil
}

// waitAwaitingLaunch waits until the prepared guard pid is blocked in the
// read of the launch pipe; it skips tb when the system cannot show that.
func waitAwaitingLaunch(tb testing.TB, pid int) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, err := awaitingLaunch(pid)
		if err != nil {
			tb.Skipf("cannot see the guard's system calls: %v", err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the guard %d is not blocked in a read of the launch pipe", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// A prepared guard waits for the go-ahead blocked in read(2), not polling,
// and starts nothing meanwhile; the go-ahead starts the command.
func TestPreparedGuardWaitsInRead(t *testing.T) {
	t.Parallel()
	ran := filepath.Join(t.TempDir(), "ran")
	pr := prepareChild(t, Config{Argv: []string{testExe, touchArg, ran}})
	waitAwaitingLaunch(t, pr.prep.proc.pgid)
	noFile(t, ran, "the command ran before the go-ahead")
	pr.launch(t)
	if res := pr.wait(t); res != (Result{}) {
		t.Errorf("Result = %+v", res)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("the command did not run: %v", err)
	}
}
