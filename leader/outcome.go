package leader

// How a held run ended: from what happened while COMMAND ran, the pure
// decision of the exit status, its log line and whether the end is recorded.

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/imds"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/runner"
)

// outcomeKind is how a held run ended. A new way for leadership to end is a
// new kind, with its input in happened and its case in decideOutcome.
type outcomeKind string

const (
	outcomeExited      outcomeKind = "exited"       // COMMAND exited by itself: its own status
	outcomeSignalled   outcomeKind = "signalled"    // a signal leaderrun did not send because of leadership ended COMMAND: 128+N
	outcomeLost        outcomeKind = "lost"         // leadership was lost; COMMAND was stopped: 76
	outcomeUnhealthy   outcomeKind = "unhealthy"    // the health check failed; COMMAND was stopped: 77
	outcomeSteppedDown outcomeKind = "stepped down" // a scheduled event concerns this VM; COMMAND was stopped: 76
	outcomeTimedOut    outcomeKind = "timed out"    // --max-runtime was reached; COMMAND was stopped: 124
	outcomeWatchdog    outcomeKind = "watchdog"     // systemd's watchdog fired; COMMAND was killed: ends by SIGABRT
)

// happened is what a held run saw by the time COMMAND had exited.
type happened struct {
	lease     string                 // the lease name, for the message
	lost      *lease.LostError       // the keeper said leadership was lost
	unhealthy *runner.UnhealthyError // the health check failed first (not after a loss)
	// pastKillDeadline: COMMAND ended at or after the kill deadline with no
	// renewal since, before the keeper said anything (leaderrun was stopped
	// or starved, and the guard killed COMMAND).
	pastKillDeadline bool
	steppedDown      *imds.Event   // the event the run stepped down for, before a loss or a failed check
	timedOut         time.Duration // the max runtime COMMAND reached and was stopped at, before anything else stopped it; 0: none
	watchdog         bool          // systemd's watchdog fired (its line is logged as it came)
	// drained: the lease was broken (lease.LostBroken) under a pause that
	// says --drain: the pause it was drained by; nil otherwise.
	drained *lease.Pause
	result  runner.Result // how COMMAND ended
}

// outcome is decideOutcome's answer.
type outcome struct {
	kind      outcomeKind
	code      int   // leaderrun's exit status
	recordEnd bool  // write lastrunend and lastexit: the lease is still held to do so
	err       error // the one line logged before exiting; nil: COMMAND's own status needs none
	// raise: leaderrun ends by this signal (exit.BySignal), as a wrapper
	// passes on the signal COMMAND died of; 0: it exits with code.
	raise syscall.Signal
}

// errKillDeadline is the reason of a loss that only the clock tells.
var errKillDeadline = errors.New("no renewal succeeded before the kill deadline: leaderrun could not act (stopped or starved), and the guard killed the command")

// lossText names why leadership was lost, in words, for the one line
// before exit 76: an operator's break or drain, another holder, a deleted
// blob, renewals that failed (for how long, and the last answer), or a
// leaderrun that could not renew; drained is the pause that drained it.
func lossText(lost *lease.LostError, drained *lease.Pause) string {
	answer := func() string {
		if lost.Last == nil {
			return ""
		}
		return " (the renewal was answered " + lost.Last.Answer() + ")"
	}
	switch lost.Cause {
	case lease.LostBroken:
		if drained != nil {
			why := ""
			if drained.Reason != "" {
				why = ", reason " + exit.Quote(drained.Reason)
			}
			return "drained by an operator (leaderrun pause --drain" + why + ")"
		}
		if lost.Last != nil {
			return "broken by an operator (leaderrun break; the renewal was answered " + lost.Last.Answer() + ")"
		}
		return "broken by an operator (leaderrun break)"
	case lease.LostTaken:
		return "taken by another holder" + answer()
	case lease.LostDeleted:
		if lost.Last != nil && lost.Last.ContainerMissing() {
			return "the lease's container was deleted" + answer()
		}
		return "the lease blob was deleted" + answer()
	case lease.LostGone:
		return "the lease is no longer this holder's" + answer()
	case lease.LostRenewals:
		last := "no answer"
		if lost.Last != nil {
			last = lost.Last.Answer()
		}
		return fmt.Sprintf("renewals failed for %s (last: %s)", lost.Unrenewed.Round(100*time.Millisecond), last)
	case lease.LostUnrenewed:
		if errors.Is(lost.Reason, errKillDeadline) {
			return lost.Reason.Error()
		}
		return fmt.Sprintf("no renewal was tried for %s: leaderrun could not act (stopped or starved)",
			lost.Unrenewed.Round(100*time.Millisecond))
	case lease.LostStopped:
		return "nothing renewed the lease any more (its keeper was stopped)"
	}
	return lost.Reason.Error()
}

// decideOutcome decides how a held run ended. The watchdog wins over all:
// systemd asked leaderrun to end by its signal. A failed health check wins
// over a loss that came after it (COMMAND was already being stopped for
// it); a lost lease is not written to (its end is not recorded), even when
// it was lost while stepping down; a step-down for a scheduled event exits
// 76 and records the end (the lease is still held: the record is written
// before the release); a run stopped at its max runtime exits 124 and
// records 124; otherwise leaderrun exits with COMMAND's own status.
func decideOutcome(h happened) outcome {
	lost := h.lost
	if lost == nil && h.pastKillDeadline {
		lost = &lease.LostError{Reason: errKillDeadline, Cause: lease.LostUnrenewed}
	}
	code := h.result.Code()
	switch {
	case h.watchdog:
		// systemd asked for an end by its signal, whatever else happened.
		return outcome{kind: outcomeWatchdog, code: exit.SignalBase + int(watchdogSignal), recordEnd: lost == nil,
			raise: watchdogSignal}
	case h.unhealthy != nil:
		// The run's end is written only while the lease is still held.
		return outcome{kind: outcomeUnhealthy, code: exit.Unhealthy, recordEnd: lost == nil,
			err: fmt.Errorf("the health check failed %d times in a row (%s); the command was stopped and the lease released",
				h.unhealthy.Failures, h.unhealthy.Last)}
	case lost != nil && h.steppedDown != nil:
		return outcome{kind: outcomeLost, code: exit.Lost,
			err: fmt.Errorf("leadership of %s was lost while stepping down for %s: %s; the command was stopped",
				exit.Quote(h.lease), eventText(*h.steppedDown), lossText(lost, h.drained))}
	case lost != nil:
		return outcome{kind: outcomeLost, code: exit.Lost,
			err: fmt.Errorf("leadership of %s was lost while the command ran: %s; the command was stopped",
				exit.Quote(h.lease), lossText(lost, h.drained))}
	case h.steppedDown != nil:
		return outcome{kind: outcomeSteppedDown, code: exit.Lost, recordEnd: true,
			err: fmt.Errorf("stepped down as leader of %s before %s; the command was stopped and the lease released",
				exit.Quote(h.lease), eventText(*h.steppedDown))}
	case h.timedOut != 0:
		// Recorded as timed out (lastexit 124), whatever signal ended it.
		return outcome{kind: outcomeTimedOut, code: exit.Timeout, recordEnd: true,
			err: fmt.Errorf("max runtime reached (%s); the command was stopped", shortDuration(h.timedOut))}
	case h.result.Signal == syscall.SIGKILL:
		// SIGKILL is not passed on: killed after the grace, or by someone
		// else, it is 137, a failure for systemd either way.
		return outcome{kind: outcomeSignalled, code: code, recordEnd: true}
	case h.result.Signal != 0:
		return outcome{kind: outcomeSignalled, code: code, recordEnd: true, raise: h.result.Signal}
	}
	return outcome{kind: outcomeExited, code: code, recordEnd: true}
}

// exitErr is the error Run returns for o: nil for a run that succeeded.
func (o outcome) exitErr() error {
	switch {
	case o.raise != 0:
		return exit.BySignal(o.raise, o.err)
	case o.code == exit.OK && o.err == nil:
		return nil
	}
	return exit.With(o.code, o.err)
}
