package pdeath

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

func TestStart(t *testing.T) {
	t.Run("reaped", func(t *testing.T) {
		cmd := exec.Command("/bin/sh", "-c", "exit 3")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		done, err := Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		<-done
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
			t.Fatalf("ProcessState %v, want exit status 3", cmd.ProcessState)
		}
		if !cmd.SysProcAttr.Setpgid {
			t.Error("Setpgid was dropped")
		}
		checkDeathSignal(t, cmd.SysProcAttr)
	})
	t.Run("start error", func(t *testing.T) {
		done, err := Start(exec.Command("/nonexistent/leaderrun-test"))
		if err == nil || done != nil {
			t.Fatalf("Start of a missing file: done %v, err %v; want an error", done, err)
		}
	})
}

func TestStartUnreaped(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exit 4")
	exited, reap, err := StartUnreaped(cmd)
	if err != nil {
		t.Fatal(err)
	}
	<-exited
	if runtime.GOOS == "linux" {
		// Exited, not reaped: a zombie whose pid is still its own.
		if _, err := os.Stat("/proc/" + strconv.Itoa(cmd.Process.Pid)); err != nil {
			t.Errorf("reaped before reap was called: %v", err)
		}
	}
	reap()
	reap()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 4 {
		t.Fatalf("ProcessState %v, want exit status 4", cmd.ProcessState)
	}
	checkDeathSignal(t, cmd.SysProcAttr)
	if _, _, err := StartUnreaped(exec.Command("/nonexistent/leaderrun-test")); err == nil {
		t.Error("StartUnreaped of a missing file succeeded")
	}
}
