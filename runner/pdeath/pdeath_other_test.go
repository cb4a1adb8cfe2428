//go:build !linux

package pdeath

import (
	"syscall"
	"testing"
)

// checkDeathSignal: there is no parent-death signal to check outside Linux.
func checkDeathSignal(*testing.T, *syscall.SysProcAttr) {}
