package cmd

// The decision of `leaderrun check`, a monitoring plugin (Nagios, Icinga,
// Sensu): from the runs a lease records and the service's clock, one state
// and one line of text. Pure: the command reads the blob(s) and prints.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leaderrun/leaderrun/lease"
)

// checkState is a monitoring plugin's state; its value is the plugin's exit
// status.
type checkState int

const (
	stateOK       checkState = 0 // the last success is recent, and nothing failed after it (a run in progress is no failure)
	stateWarning  checkState = 1 // the last success is recent, but a later run failed (non-zero exit, or lost its lease before recording its end)
	stateCritical checkState = 2 // no run ended with status 0 within --max-age, or ever
	stateUnknown  checkState = 3 // storage unreadable, a usage error, or no Date from the service: no age can be told
)

func (s checkState) String() string {
	return [...]string{stateOK: "OK", stateWarning: "WARNING", stateCritical: "CRITICAL", stateUnknown: "UNKNOWN"}[s]
}

// checkInput is what check decides from.
type checkInput struct {
	Runs        []lease.Run   // newest start first: lease.ReadHistory, merged across slots with lease.MergeRuns
	LastSuccess *lease.Run    // lease.LastSuccess (the newest across slots); nil if none recorded
	Now         time.Time     // the service's Date header of the read
	MaxAge      time.Duration // --max-age; the caller refuses values ≤ 0 as a usage error
	// Schedule, of a lease run with --schedule (nil if not): an
	// occurrence that never started (Missed) makes it CRITICAL.
	Schedule *scheduleView
}

// checkResult is check's answer: exit with State, print Line (one line, no
// newline) on stdout.
type checkResult struct {
	State checkState
	Line  string
}

// decideCheck applies the rule of `leaderrun check` (the states above).
// The last success is the later of LastSuccess and the newest successful run
// of Runs. A run is after it when it ended later, or, with its end unknown,
// started at or after the success ended; with slots, a run lost on another
// slot that had started before the success ended is not counted. Ages are by
// the service's clock, rounded to seconds. The line ends with Nagios
// perfdata: `age=<s>s;;<max-age s>` (U when there is no success) and
// `last_exit=<code>` of the newest run that is over (U when lost or none).
func decideCheck(in checkInput) checkResult {
	if in.Now.IsZero() {
		return checkUnknown(fmt.Errorf("the storage service sent no Date header: cannot tell how old the last run is"))
	}
	succ := in.LastSuccess
	for i, r := range in.Runs {
		if r.Succeeded() && !r.End.IsZero() && (succ == nil || r.End.After(succ.End)) {
			succ = &in.Runs[i]
		}
	}
	var failed []lease.Run
	var running *lease.Run
	for i, r := range in.Runs {
		if !after(r, succ) {
			continue
		}
		switch {
		case r.Failed():
			failed = append(failed, r)
		case r.Running && running == nil:
			running = &in.Runs[i]
		}
	}

	var b strings.Builder
	state := stateOK
	age := time.Duration(-1)
	if succ != nil {
		age = max(in.Now.Sub(succ.End).Round(time.Second), 0)
	}
	switch {
	case succ == nil:
		state = stateCritical
		b.WriteString("no run has ever ended with status 0")
	case age > in.MaxAge:
		state = stateCritical
		fmt.Fprintf(&b, "no run ended with status 0 within %s: the last successful run ended %s ago %s",
			in.MaxAge, age, onTerm(succ.Holder, succ.Term))
	default:
		if len(failed) > 0 {
			state = stateWarning
		}
		fmt.Fprintf(&b, "last successful run ended %s ago %s", age, onTerm(succ.Holder, succ.Term))
	}
	switch {
	case len(failed) > 0 && state == stateWarning:
		fmt.Fprintf(&b, ", but %s", laterFailures(failed, succ != nil, in.Now))
	case len(failed) > 0:
		fmt.Fprintf(&b, "; %s", laterFailures(failed, succ != nil, in.Now))
	case succ == nil && len(in.Runs) == 0:
		b.WriteString("; no run is recorded")
	}
	if running != nil {
		fmt.Fprintf(&b, "; a run is in progress %s, started %s ago", onTerm(running.Holder, running.Term),
			max(in.Now.Sub(running.Start).Round(time.Second), 0))
	}
	text := b.String()
	if v := in.Schedule; v != nil && !v.missed.IsZero() {
		state = stateCritical
		text = fmt.Sprintf("the occurrence %s of schedule %q never started; %s", rfc3339(v.missed), v.spec, text)
	}
	return checkResult{State: state, Line: state.String() + ": " + oneLine(text) + " | " + perfdata(age, in.MaxAge, in.Runs)}
}

// after reports whether r came after the success succ (every run does when
// there is none). Times have one-second resolution: within the same second
// the terms tell, where both are known (a later run of the same blob has a
// higher term).
func after(r lease.Run, succ *lease.Run) bool {
	if succ == nil {
		return true
	}
	t := r.End
	if t.IsZero() {
		t = r.Start
	}
	switch {
	case !t.Equal(succ.End):
		return t.After(succ.End)
	case r.Term > 0 && succ.Term > 0:
		return r.Term > succ.Term
	default:
		return r.End.IsZero()
	}
}

// laterFailures describes the newest failure of failed (newest first).
func laterFailures(failed []lease.Run, hadSuccess bool, now time.Time) string {
	what := "the last run failed"
	switch {
	case hadSuccess && len(failed) == 1:
		what = "a later run failed"
	case hadSuccess:
		what = strconv.Itoa(len(failed)) + " later runs failed, the last"
	case len(failed) > 1:
		what = strconv.Itoa(len(failed)) + " runs failed, the last"
	}
	r := failed[0]
	if r.EndUnknown() {
		return fmt.Sprintf("%s: lost its lease before recording its end, %s, started %s", what, onTerm(r.Holder, r.Term), at(r.Start, now))
	}
	when := r.End
	if when.IsZero() {
		when = r.Start
	}
	return fmt.Sprintf("%s: exit %d %s at %s", what, *r.ExitCode, onTerm(r.Holder, r.Term), at(when, now))
}

func onTerm(holder string, term int64) string {
	if holder == "" {
		holder = "an unknown host"
	}
	if term <= 0 {
		return "on " + holder
	}
	return fmt.Sprintf("on %s (term %d)", holder, term)
}

func at(t, now time.Time) string {
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), max(now.Sub(t).Round(time.Second), 0))
}

// perfdata: age of the last success in seconds (critical above max-age),
// and the exit status of the newest run that is over.
func perfdata(age, maxAge time.Duration, runs []lease.Run) string {
	a := "U"
	if age >= 0 {
		a = strconv.FormatInt(int64(age/time.Second), 10) + "s"
	}
	exit := "U"
	for _, r := range runs {
		if r.Running {
			continue
		}
		if r.ExitCode != nil {
			exit = strconv.Itoa(*r.ExitCode)
		}
		break
	}
	return fmt.Sprintf("age=%s;;%d last_exit=%s", a, int64(maxAge.Round(time.Second)/time.Second), exit)
}

// checkUnknown is check's answer when it cannot decide: storage unreadable
// or a usage error. err's text must hold no secret (lease's errors do not).
func checkUnknown(err error) checkResult {
	return checkResult{State: stateUnknown, Line: stateUnknown.String() + ": " + oneLine(err.Error())}
}

// oneLine keeps a plugin's output to one line, and its text free of "|",
// which starts the perfdata (holders are printable ASCII and may hold one).
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '|':
			return '/'
		case r < 0x20 || r == 0x7f:
			return ' '
		}
		return r
	}, s)
}
