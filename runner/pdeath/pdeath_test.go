package pdeath

import (
	"os/exec"
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
