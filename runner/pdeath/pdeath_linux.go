package pdeath

// The parent-death signal on Linux.

import "syscall"

// setDeathSignal gives SIGKILL as the parent-death signal.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
