package pdeath

// The parent-death signal on Linux, and waiting for an exit without
// reaping.

import (
	"errors"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// setDeathSignal gives SIGKILL as the parent-death signal.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// awaitExit waits until cmd's process has exited, leaving it a zombie
// (waitid with WNOWAIT). Should waitid fail otherwise than by an
// interruption, it reaps it (cmd.Wait): the exit is then known for sure.
func awaitExit(cmd *exec.Cmd) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			return
		}
		if !errors.Is(err, unix.EINTR) {
			_ = cmd.Wait()
			return
		}
	}
}
