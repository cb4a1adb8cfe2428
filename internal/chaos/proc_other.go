//go:build !linux

package chaos

import (
	"errors"
	"syscall"
)

// sysProcAttr: leaderrun in its own process group. There is no
// parent-death signal outside Linux: a driver killed abruptly leaves its
// leaderrun processes running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// runningExe reports whether pid exists; without /proc the executable
// cannot be checked, so a reused pid counts as alive.
func runningExe(pid int, _ string) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
