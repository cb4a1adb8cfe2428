package cmd

// `leaderrun check`: a monitoring plugin (Nagios, Icinga, Sensu). One line
// on stdout and the plugins' exit statuses (0 OK, 1 WARNING, 2 CRITICAL, 3
// UNKNOWN), usage errors included. The decision, from the runs a lease
// records and the service's clock, is decideCheck's, pure: the command reads
// the blob(s) and prints.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/lease"
)

type checkOptions struct {
	loc    locationOptions
	maxAge time.Duration
}

func newCheckCmd(a *app) *cobra.Command {
	o := &checkOptions{}
	c := &cobra.Command{
		Use:   "check -l NAME --max-age DURATION",
		Short: "Monitoring plugin: did a run of NAME succeed within DURATION?",
		Long: `check is a monitoring plugin for Nagios, Icinga, Sensu and the like. It reads
the lease's recorded runs (one listing of NAME, no lease operation) and prints
one line on stdout that begins with the state, followed by perfdata:

  OK        the last run that succeeded ended within --max-age, and no run
            after it failed (exit 0)
  WARNING   it did, but a later run failed: a non-zero exit, or a run that
            lost its lease before recording its end (exit 1)
  CRITICAL  no run ended with status 0 within --max-age, or ever (exit 2)
  UNKNOWN   the storage cannot be read, or a usage error (exit 3)

Ages are by the storage service's clock (the listing's Date), never this
host's. These exit statuses are the plugins' convention, not leaderrun's
usual 64 and 69.`,
		Example: `  leaderrun check -l cron/report --max-age 26h
  OK: last successful run ended 3m12s ago on vm-3 (term 42) | age=192s;;93600 last_exit=0

  # Nagios / Icinga 1.x
  define command {
    command_name  check_leaderrun
    command_line  /usr/bin/leaderrun check -l $ARG1$ --max-age $ARG2$
  }`,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.complete(c.Flags()); err != nil {
				return checkUsage(err)
			}
			return runCheck(c.Context(), a, o)
		},
	}
	usageErrorsAs(c, a, checkUsage)
	o.loc.addFlags(c.Flags())
	c.Flags().DurationVar(&o.maxAge, "max-age", 0, "CRITICAL unless a run ended with status 0 less than this long ago (required)")
	return c
}

func (o *checkOptions) complete(fs *pflag.FlagSet) error {
	if err := o.loc.complete(fs); err != nil {
		return err
	}
	if !fs.Changed("max-age") {
		return fmt.Errorf("missing --max-age DURATION: how long ago the last successful run may have ended")
	}
	if o.maxAge <= 0 {
		return fmt.Errorf("invalid --max-age %s: must be more than 0", o.maxAge)
	}
	return nil
}

// checkUsage is a usage error of check: UNKNOWN.
func checkUsage(err error) error {
	return &pluginExit{res: checkUnknown(fmt.Errorf("usage: %w (see 'leaderrun check --help')", err))}
}

func runCheck(ctx context.Context, a *app, o *checkOptions) error {
	rctx, cancel := context.WithTimeout(ctx, operatorTimeout)
	defer cancel()
	_, v, err := o.loc.view(rctx, a.log)
	if err != nil {
		return &pluginExit{res: checkUnknown(err)}
	}
	in := checkInput{Runs: v.Runs(), LastSuccess: v.LastSuccess(), Now: v.Date, MaxAge: o.maxAge}
	if s, ok := viewSchedule(v.Slot(0).Props, v.Date); ok {
		in.Schedule = &s
	}
	return &pluginExit{res: decideCheck(in)}
}

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
	Runs        []lease.Run   // newest start first: lease.View.Runs, every slot's history merged
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
