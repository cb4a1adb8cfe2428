package chaos

// What a trial measured: Result, with its spans and the exits of the two
// leaderrun processes.

import (
	"strconv"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// Span is a measured duration; OK is false when it could not be measured
// (say, the follower never ran).
type Span struct {
	D  time.Duration
	OK bool
}

func span(d time.Duration) Span { return Span{D: d, OK: true} }

func (s Span) String() string {
	if !s.OK {
		return "—"
	}
	return fmtDur(s.D)
}

// Exit is how a leaderrun process of the trial ended.
type Exit struct {
	Started bool
	Ended   bool
	// During: it ended before the trial's teardown signalled it (by
	// itself, or by the fault).
	During bool
	Code   int            // exit status; -1 if a signal ended it
	Signal syscall.Signal // the signal that ended it, 0 if none
}

func (e Exit) String() string {
	switch {
	case !e.Started:
		return "not started"
	case !e.Ended:
		return "still running"
	}
	s := strconv.Itoa(e.Code)
	if e.Signal != 0 {
		s = e.Signal.String()
	}
	if !e.During {
		s += " (after teardown's SIGTERM)"
	}
	return s
}

// exitOf is how p ended; during: before the teardown signalled it.
func exitOf(p *testenv.Process, during bool) Exit {
	if p == nil {
		return Exit{}
	}
	if !p.Exited() {
		return Exit{Started: true}
	}
	e := Exit{Started: true, Ended: true, During: during, Code: p.Cmd.ProcessState.ExitCode()}
	if ws, ok := p.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = ws.Signal()
	}
	return e
}

// Result is what a trial measured, and its verdict.
type Result struct {
	Trial
	Lease, Container string
	Start            time.Time
	Wall             time.Duration // the whole trial

	// FaultAt is when the fault began (for a proxy fault, just after the
	// proxy's mode changed). LastRenewal is an upper bound of t_ok when the
	// fault began: when the proxy last saw an acquire or renew request
	// (polled every 5 ms), or FaultAt if one arrived as the fault began.
	// WakeAt (Freeze) is the SIGCONT; TeardownAt when the trial began to
	// stop what was left.
	FaultAt, LastRenewal, WakeAt, TeardownAt time.Time
	// NotBefore (Eviction) is the Preempt's NotBefore as sent; ReleaseAt
	// when the holder's release request reached its proxy (zero if none
	// did).
	NotBefore, ReleaseAt time.Time

	Procs   []Proc  // every process the children recorded
	Overlap Overlap // the longest time a holder's and a follower's process both ran

	// ChildAfterFault: the holder's group's end − FaultAt.
	// AfterLastRenewal: the same end − LastRenewal, a lower bound of how
	// long the group outlived t_ok (the rule: at most 14 s).
	// Failover: the follower's child's begin − FaultAt.
	// Gap: the follower's child's begin − the holder's group's end
	// (negative when they overlapped).
	// WakeToKill (Freeze): the holder's group's end − WakeAt.
	// BeforeNotBefore (Eviction): NotBefore − the holder's group's end.
	// Handover (Eviction): the follower's child's begin − ReleaseAt.
	ChildAfterFault, AfterLastRenewal, Failover, Gap, WakeToKill Span
	BeforeNotBefore, Handover                                    Span
	// Posted names the sides whose metadata service received a POST
	// (Eviction): leaderrun must never approve an event.
	Posted []string

	HolderExit, FollowerExit Exit
	// DeputyExit (Deputy) is the deputy's; Successor names who took over
	// first: "deputy" or "follower".
	DeputyExit    Exit
	DeputyFaultAt time.Time
	Successor     string
	// TermReset: the follower's term is not above the holder's (after
	// StorageLoss the new blob starts again at term 1).
	TermReset bool
	// Injected counts the requests the proxy did not forward;
	// RenewFailures the "lease renewal failed" lines in the holder's log.
	Injected, RenewFailures int64
	// MaxBeatGap is the longest time between two records of one process:
	// how precisely a killed process's end is known in this trial.
	MaxBeatGap time.Duration

	// Failures are the scenario's expectations that were not met (product
	// failures); Notes are observations. Err is set when the trial could not
	// be run as designed (start-up, emulator, interruption): then there is
	// no verdict.
	Failures []string
	Notes    []string
	Err      error
}

// Failed reports whether the trial ran and an expectation was not met.
func (r *Result) Failed() bool { return r.Err == nil && len(r.Failures) > 0 }
