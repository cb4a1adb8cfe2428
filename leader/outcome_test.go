package leader

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/imds"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/runner"
)

func TestDecideOutcome(t *testing.T) {
	answered := func(status int, code string) *lease.StorageError {
		return &lease.StorageError{Op: "renew", StatusCode: status, Code: code}
	}
	loss := func(cause lease.LostCause, last *lease.StorageError) *lease.LostError {
		return &lease.LostError{Reason: errors.New("the service says the lease is gone"), Cause: cause, Last: last}
	}
	lost := loss(lease.LostTaken, answered(409, "LeaseIdMismatchWithLeaseOperation"))
	broken := loss(lease.LostBroken, answered(409, "LeaseIsBrokenAndCannotBeRenewed"))
	drain := &lease.Pause{Reason: "moving to the new cluster", Drain: true}
	failing := &lease.LostError{Reason: errors.New("no renewal succeeded"), Cause: lease.LostRenewals,
		Last: answered(503, "ServerBusy"), Unrenewed: 8500 * time.Millisecond}
	unreachable := &lease.LostError{Reason: errors.New("no renewal succeeded"), Cause: lease.LostRenewals,
		Last: &lease.StorageError{Op: "renew"}, Unrenewed: 8500 * time.Millisecond}
	frozen := &lease.LostError{Reason: errors.New("deadline passed"), Cause: lease.LostUnrenewed, Unrenewed: 14 * time.Second}
	unhealthy := &runner.UnhealthyError{Failures: 3, Last: "exit status 1"}
	preempt := &imds.Event{EventID: "E1", EventType: "Preempt", EventStatus: "Scheduled", NotBeforeText: "Mon, 19 Sep 2016 18:29:47 GMT",
		NotBefore: imds.ParseNotBefore("Mon, 19 Sep 2016 18:29:47 GMT")}
	exited := func(code int) runner.Result { return runner.Result{ExitCode: code} }
	killed := func(sig syscall.Signal) runner.Result { return runner.Result{ExitCode: -1, Signal: sig} }
	tests := []struct {
		name   string
		h      happened
		kind   outcomeKind
		code   int
		record bool
		msg    string // in the logged line; "" when there is none
	}{
		{"success", happened{result: exited(0)}, outcomeExited, 0, true, ""},
		{"command's own failure", happened{result: exited(3)}, outcomeExited, 3, true, ""},
		{"command's own 76 is not a loss", happened{result: exited(76)}, outcomeExited, 76, true, ""},
		{"forwarded SIGTERM", happened{result: killed(syscall.SIGTERM)}, outcomeSignalled, 143, true, ""},
		{"lost", happened{lost: lost, result: killed(syscall.SIGTERM)}, outcomeLost, exit.Lost, false, "LeaseIdMismatchWithLeaseOperation"},
		{"taken", happened{lost: lost, result: killed(syscall.SIGTERM)}, outcomeLost, exit.Lost, false,
			`leadership of "cron/report" was lost while the command ran: taken by another holder (the renewal was answered 409 LeaseIdMismatchWithLeaseOperation); the command was stopped`},
		{"broken", happened{lost: broken, result: killed(syscall.SIGTERM)}, outcomeLost, exit.Lost, false,
			"lost while the command ran: broken by an operator (leaderrun break; the renewal was answered 409 LeaseIsBrokenAndCannotBeRenewed)"},
		{"drained", happened{lost: broken, drained: drain, result: killed(syscall.SIGTERM)}, outcomeLost, exit.Lost, false,
			`lost while the command ran: drained by an operator (leaderrun pause --drain, reason "moving to the new cluster")`},
		{"a drain pause does not make another loss a drain", happened{lost: lost, drained: drain, result: killed(syscall.SIGTERM)}, outcomeLost, exit.Lost, false,
			"taken by another holder"},
		{"blob deleted", happened{lost: loss(lease.LostDeleted, answered(404, "BlobNotFound")), result: killed(syscall.SIGTERM)}, outcomeLost, exit.Lost, false,
			"the lease blob was deleted (the renewal was answered 404 BlobNotFound)"},
		{"gone otherwise", happened{lost: loss(lease.LostGone, answered(409, "LeaseNotPresentWithLeaseOperation")), result: killed(syscall.SIGTERM)}, outcomeLost, exit.Lost, false,
			"the lease is no longer this holder's (the renewal was answered 409 LeaseNotPresentWithLeaseOperation)"},
		{"renewals failed", happened{lost: failing, result: killed(syscall.SIGTERM)}, outcomeLost, exit.Lost, false,
			"renewals failed for 8.5s (last: 503 ServerBusy)"},
		{"renewals unanswered", happened{lost: unreachable, result: killed(syscall.SIGTERM)}, outcomeLost, exit.Lost, false,
			"renewals failed for 8.5s (last: storage unreachable)"},
		{"no renewal tried", happened{lost: frozen, result: killed(syscall.SIGKILL)}, outcomeLost, exit.Lost, false,
			"no renewal was tried for 14s: leaderrun could not act (stopped or starved)"},
		{"keeper stopped", happened{lost: loss(lease.LostStopped, nil), result: killed(syscall.SIGTERM)}, outcomeLost, exit.Lost, false,
			"nothing renewed the lease any more"},
		{"a cause not said: the reason", happened{lost: &lease.LostError{Reason: errors.New("some reason")}, result: killed(syscall.SIGTERM)}, outcomeLost, exit.Lost, false,
			"some reason"},
		{"lost although the command exited 0", happened{lost: lost, result: exited(0)}, outcomeLost, exit.Lost, false, "was lost while the command ran"},
		{"kill deadline passed unseen", happened{pastKillDeadline: true, result: killed(syscall.SIGKILL)}, outcomeLost, exit.Lost, false, "before the kill deadline"},
		{"unhealthy", happened{unhealthy: unhealthy, result: killed(syscall.SIGTERM)}, outcomeUnhealthy, exit.Unhealthy, true, "failed 3 times in a row (exit status 1)"},
		{"stepped down", happened{steppedDown: preempt, result: killed(syscall.SIGTERM)}, outcomeSteppedDown, exit.Lost, true,
			"before scheduled event Preempt E1 for this VM at Mon, 19 Sep 2016 18:29:47 GMT"},
		{"stepped down, the command exited 0", happened{steppedDown: preempt, result: exited(0)}, outcomeSteppedDown, exit.Lost, true, "stepped down"},
		{"stepped down, then lost while stopping", happened{steppedDown: preempt, lost: lost, result: killed(syscall.SIGKILL)}, outcomeLost, exit.Lost, false,
			"lost while stepping down for scheduled event Preempt E1 for this VM at Mon, 19 Sep 2016 18:29:47 GMT: taken by another holder"},
		{"stepped down, kill deadline passed unseen", happened{steppedDown: preempt, pastKillDeadline: true, result: killed(syscall.SIGKILL)}, outcomeLost, exit.Lost, false,
			"before the kill deadline"},
		{"max runtime reached", happened{timedOut: time.Hour, result: killed(syscall.SIGTERM)}, outcomeTimedOut, exit.Timeout, true, "max runtime reached (1h)"},
		{"max runtime reached, killed after the grace", happened{timedOut: 90 * time.Minute, result: killed(syscall.SIGKILL)}, outcomeTimedOut, exit.Timeout, true, "max runtime reached (1h30m)"},
		{"max runtime reached, the command exited 0 on the stop signal", happened{timedOut: 2 * time.Second, result: exited(0)}, outcomeTimedOut, exit.Timeout, true, "max runtime reached (2s)"},
		{"max runtime reached, then lost while stopping", happened{timedOut: time.Hour, lost: lost, result: killed(syscall.SIGKILL)}, outcomeLost, exit.Lost, false, "was lost while the command ran"},
		{"unhealthy, then lost while stopping", happened{unhealthy: unhealthy, lost: lost, result: killed(syscall.SIGKILL)}, outcomeUnhealthy, exit.Unhealthy, false, "health check failed"}, // the lease is gone: nothing to record on
		// the watchdog's line came as it fired: none at the exit
		{"watchdog", happened{watchdog: true, result: killed(syscall.SIGKILL)}, outcomeWatchdog, 134, true, ""},
		{"watchdog over a loss", happened{watchdog: true, lost: lost, result: killed(syscall.SIGKILL)}, outcomeWatchdog, 134, false, ""},
		{"watchdog over a failed check", happened{watchdog: true, unhealthy: unhealthy, result: killed(syscall.SIGKILL)}, outcomeWatchdog, 134, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.h.lease = "cron/report"
			got := decideOutcome(tt.h)
			if got.kind != tt.kind || got.code != tt.code || got.recordEnd != tt.record {
				t.Fatalf("got %v code %d record %v, want %v code %d record %v", got.kind, got.code, got.recordEnd, tt.kind, tt.code, tt.record)
			}
			switch {
			case tt.msg == "" && got.err != nil:
				t.Fatalf("logged line %q, want none", got.err)
			case tt.msg != "" && (got.err == nil || !strings.Contains(got.err.Error(), tt.msg)):
				t.Fatalf("logged line %v, want it to contain %q", got.err, tt.msg)
			}
			if c, ok := exit.Code(got.exitErr()); (ok || tt.code != 0) && c != tt.code {
				t.Fatalf("exit.Code(exitErr()) = %d, want %d", c, tt.code)
			}
		})
	}
}

// A signal COMMAND died of is passed on (leaderrun ends by it), except
// SIGKILL (137); leaderrun's own statuses are never raised.
func TestDecideOutcomeRaise(t *testing.T) {
	lost := &lease.LostError{Reason: errors.New("gone")}
	for _, tc := range []struct {
		name  string
		h     happened
		raise syscall.Signal
	}{
		{"SIGTERM", happened{result: runner.Result{ExitCode: -1, Signal: syscall.SIGTERM}}, syscall.SIGTERM},
		{"SIGINT", happened{result: runner.Result{ExitCode: -1, Signal: syscall.SIGINT}}, syscall.SIGINT},
		{"SIGSEGV", happened{result: runner.Result{ExitCode: -1, Signal: syscall.SIGSEGV}}, syscall.SIGSEGV},
		{"SIGKILL after the grace", happened{result: runner.Result{ExitCode: -1, Signal: syscall.SIGKILL}}, 0},
		{"exit 143 is COMMAND's own", happened{result: runner.Result{ExitCode: 143}}, 0},
		{"lost, COMMAND stopped by SIGTERM", happened{lost: lost, result: runner.Result{ExitCode: -1, Signal: syscall.SIGTERM}}, 0},
		{"the watchdog fired", happened{watchdog: true, result: runner.Result{ExitCode: -1, Signal: syscall.SIGKILL}}, syscall.SIGABRT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := decideOutcome(tc.h).exitErr()
			if got := exit.SignalOf(err); got != tc.raise {
				t.Fatalf("raises %v, want %v", got, tc.raise)
			}
		})
	}
}
