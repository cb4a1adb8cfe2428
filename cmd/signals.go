package cmd

// Signals: the stop signal's name on the command line, and the signals
// from outside that leaderrun handles.

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// parseSignal accepts TERM, SIGTERM, sigterm or 15.
func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n >= 65 || unix.SignalName(syscall.Signal(n)) == "" {
			return 0, usagef("invalid --kill-signal %q: no such signal", s)
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig := unix.SignalNum(name)
	if sig == 0 {
		return 0, usagef("invalid --kill-signal %q: use a name such as TERM, INT, HUP or a number", s)
	}
	return sig, nil
}

func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(sig))
}

// outsideSignals are the signals leaderrun handles: while waiting, a
// terminating one ends the wait; while COMMAND runs, all are passed to the
// runner, which forwards them to COMMAND's process group.
var outsideSignals = []os.Signal{
	syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH,
}

func terminating(sig os.Signal) bool {
	switch sig {
	case syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT:
		return true
	}
	return false
}
