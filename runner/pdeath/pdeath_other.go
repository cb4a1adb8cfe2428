//go:build !linux

package pdeath

// No parent-death signal outside Linux.

import "syscall"

// setDeathSignal does nothing.
func setDeathSignal(*syscall.SysProcAttr) {}
