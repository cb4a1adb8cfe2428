package cmd

import (
	"errors"
	"fmt"
)

// Exit statuses of leaderrun's own, as the README's "Exit status" table
// lists them. COMMAND's own status and 128+N pass through unchanged.
const (
	exitOK          = 0
	exitUsage       = 64 // EX_USAGE: bad flag, bad duration, missing lease name
	exitUnavailable = 69 // EX_UNAVAILABLE: storage unreachable, unauthorized or refused
	exitConflict    = 75 // EX_TEMPFAIL: held by someone else (default of -E)
	exitLost        = 76 // leadership lost while COMMAND ran
	exitUnhealthy   = 77 // the health check failed
	exitNotExec     = 126
	exitNotFound    = 127
	exitSignalBase  = 128
	exitInternal    = 70 // EX_SOFTWARE: a bug in leaderrun
)

// usageError is a mistake on the command line or in the environment; it
// exits 64 and points at --help.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error {
	return &usageError{err: fmt.Errorf(format, a...)}
}

// exitError carries the status leaderrun exits with and the one line that
// says why. A nil err means the status needs no explanation (COMMAND's own
// status, or a skipped run already logged).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith returns an error that makes Execute exit with code; err, when not
// nil, is the plain line logged before exiting.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// exitCode decides leaderrun's exit status; it is the only place that does.
// Errors that are neither usage nor exit errors come from cobra's own
// parsing (unknown command, bad flag) and are usage errors too.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var pe *pluginExit
	if errors.As(err, &pe) {
		return int(pe.res.State)
	}
	return exitUsage
}

// pluginExit ends `leaderrun check`: its line goes to stdout, and its state
// is the exit status (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN: the
// monitoring plugins' convention, usage and storage errors included), not
// leaderrun's own codes. Every outcome of check is one, OK included.
type pluginExit struct{ res checkResult }

func (e *pluginExit) Error() string { return e.res.Line }
