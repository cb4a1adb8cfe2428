//go:build !linux

package testenv

// Whether a pid still runs, outside Linux.

import (
	"errors"
	"syscall"
)

// RunningExe reports whether pid exists; without /proc the executable
// cannot be checked, so a reused pid counts as alive.
func RunningExe(pid int, _ string) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
