//go:build unix

// The controlling terminal's foreground: handed to the command's group, and
// taken back.

package runner

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// foregroundTerminal returns f's descriptor and true when f is leaderrun's
// controlling terminal and leaderrun's process group is in its foreground.
func foregroundTerminal(f *os.File) (int, bool) {
	fd := int(f.Fd())
	// TIOCGPGRP fails (ENOTTY) on anything but the controlling terminal.
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || pg != unix.Getpgrp() {
		return -1, false
	}
	return fd, true
}

// reclaimTerminal puts leaderrun's process group back in the terminal's
// foreground. From a background group that raises SIGTTOU, so it is ignored
// for the call, then given back its previous handling.
func reclaimTerminal(fd int) error {
	if !signal.Ignored(syscall.SIGTTOU) {
		signal.Ignore(syscall.SIGTTOU)
		defer signal.Reset(syscall.SIGTTOU)
	}
	return unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, unix.Getpgrp())
}
