package leader

// Signals: those a run handles from outside, which of them ask it to stop,
// and a signal's name for the log.

import (
	"os"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// outsideSignals are the signals a run handles: the terminating ones ask
// COMMAND to stop (and end a wait); the others are forwarded as they are.
var (
	terminatingSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}
	outsideSignals     = append(terminatingSignals, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
)

// terminating reports whether sig asks leaderrun to stop.
func terminating(sig os.Signal) bool { return slices.Contains(terminatingSignals, sig) }

// signalName is a signal's name as the shell spells it (SIGTERM).
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(sig))
}
