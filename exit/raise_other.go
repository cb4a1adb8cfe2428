//go:build !linux

package exit

import "syscall"

// Raise does nothing here: without Linux's raw rt_sigaction, Go's runtime
// keeps its own handling of the signal (a goroutine dump for SIGQUIT), so
// the caller exits 128+sig, the status a shell sees either way.
func Raise(sig syscall.Signal) {}
