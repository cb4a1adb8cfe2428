//go:build !linux

package pdeath

// No parent-death signal outside Linux, and no waiting for an exit
// without reaping.

import (
	"os/exec"
	"syscall"
)

// setDeathSignal does nothing.
func setDeathSignal(*syscall.SysProcAttr) {}

// awaitExit reaps cmd's process.
func awaitExit(cmd *exec.Cmd) { _ = cmd.Wait() }
