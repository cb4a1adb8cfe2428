// The parent-death signal on Linux.

package pdeath

import (
	"os/exec"
	"syscall"
)

// setDeathSignal gives cmd SIGKILL as its parent-death signal.
func setDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
