package cmd

// Signals: the stop signal's name on the command line, and the signals
// from outside that leaderrun handles.

import (
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/leaderrun/leaderrun/exit"
)

// parseSignal accepts TERM, SIGTERM, sigterm or 15.
func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n >= 65 || unix.SignalName(syscall.Signal(n)) == "" {
			return 0, exit.Usagef("invalid --kill-signal %q: no such signal", s)
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig := unix.SignalNum(name)
	if sig == 0 {
		return 0, exit.Usagef("invalid --kill-signal %q: use a name such as TERM, INT, HUP or a number", s)
	}
	return sig, nil
}
