// Package exit holds leaderrun's exit statuses and the error that carries
// one, with the one line that says why, from where it is decided to where
// the process exits (cmd.Execute). The README's "Exit status" table lists
// them; COMMAND's own status passes through unchanged, and a signal that
// ended COMMAND or the wait is passed on as a wrapper passes it: leaderrun
// ends by the same signal (Raise).
package exit

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"
)

// leaderrun's own statuses (sysexits.h where one fits).
const (
	OK          = 0
	Usage       = 64  // EX_USAGE: bad flag, bad duration, missing lease name
	Unavailable = 69  // EX_UNAVAILABLE: storage unreachable, unauthorized or refused
	Internal    = 70  // EX_SOFTWARE: a bug in leaderrun
	Conflict    = 75  // EX_TEMPFAIL: held by someone else (default of -E)
	Lost        = 76  // leadership lost while COMMAND ran
	Unhealthy   = 77  // the health check failed
	Timeout     = 124 // --max-runtime reached, as timeout(1) exits
	NotExec     = 126
	NotFound    = 127
	SignalBase  = 128
)

// Error carries the status leaderrun exits with and the one line that says
// why. A nil Err means the status needs no explanation (COMMAND's own
// status, or a skipped run already logged).
type Error struct {
	Code int
	Err  error
	// Signal, when not 0, is the signal leaderrun ends by once the line is
	// logged (Raise): COMMAND died of it, or it ended the wait. Code is
	// then 128+Signal, the status a shell sees either way, and the one
	// leaderrun exits with where the signal does not end it.
	Signal syscall.Signal
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// With returns an error that makes leaderrun exit with code; err, when not
// nil, is the plain line logged before exiting.
func With(code int, err error) error { return &Error{Code: code, Err: err} }

// BySignal returns an error that makes leaderrun end by sig, as a wrapper
// passes on a signal (timeout(1), a shell): its exit status is 128+sig for
// a shell, and systemd counts a SIGTERM, SIGINT, SIGHUP or SIGPIPE as a
// clean stop. err, when not nil, is the plain line logged before.
func BySignal(sig syscall.Signal, err error) error {
	return &Error{Code: SignalBase + int(sig), Err: err, Signal: sig}
}

// SignalOf is the signal an *Error in err's chain says leaderrun ends by;
// 0 when there is none.
func SignalOf(err error) syscall.Signal {
	var e *Error
	if errors.As(err, &e) {
		return e.Signal
	}
	return 0
}

// Usagef is a mistake on the command line or in the environment: exit 64.
func Usagef(format string, a ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, a...)}
}

// Code is the status an *Error in err's chain carries; ok is false when
// there is none.
func Code(err error) (code int, ok bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	return 0, false
}

// A value a log line echoes (a lease name, an identity, a reason) is cut
// when longer than cutOver characters: its first and last cutKeep
// characters, and its length.
const (
	cutOver = 80
	cutKeep = 32
)

// Cut is s for a log line: whole when short, else cut in the middle and
// its length told: "aaaa…aaaa (1024 characters)". A line names what was
// typed without repeating a whole page of it.
func Cut(s string) string {
	r := []rune(s)
	if len(r) <= cutOver {
		return s
	}
	return fmt.Sprintf("%s…%s (%d characters)", string(r[:cutKeep]), string(r[len(r)-cutKeep:]), len(r))
}

// Quote is Cut within quotes: `"aaaa…aaaa" (1024 characters)`, or s
// quoted whole when short, as %q writes it.
func Quote(s string) string {
	r := []rune(s)
	if len(r) <= cutOver {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s (%d characters)", strconv.Quote(string(r[:cutKeep])+"…"+string(r[len(r)-cutKeep:])), len(r))
}
