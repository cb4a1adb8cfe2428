//go:build !linux

// No parent-death signal outside Linux.

package pdeath

import "syscall"

// setDeathSignal does nothing.
func setDeathSignal(*syscall.SysProcAttr) {}
