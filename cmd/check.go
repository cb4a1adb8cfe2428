package cmd

// `leaderrun check`: a monitoring plugin (Nagios, Icinga, Sensu). One line
// on stdout and the plugins' exit statuses (0 OK, 1 WARNING, 2 CRITICAL, 3
// UNKNOWN), usage errors included. The decision, from the runs a lease
// records and the service's clock, is decideCheck's, pure: the command reads
// the blob(s) and prints.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/schedule"
)

type checkOptions struct {
	loc      locationOptions
	warning  time.Duration // -w
	critical time.Duration // -c, or --max-age
	maxAge   time.Duration // --max-age, the name -c had first
	timeout  time.Duration // -t
	deadline time.Duration // --starting-deadline
	verbose  int           // -v, counted
}

// checkTimeout is -t's default, the Monitoring Plugins guidelines' 10 s.
const checkTimeout = 10 * time.Second

func newCheckCmd(a *app) *cobra.Command {
	o := &checkOptions{timeout: checkTimeout}
	c := &cobra.Command{
		Use:   "check -l NAME -c AGE [-w AGE] [-t SECONDS] [-v]",
		Short: "Monitoring plugin: did a run of NAME succeed within AGE?",
		Long: `check is a monitoring plugin for Nagios, Icinga, Sensu and the like. It reads
the lease's recorded runs (one listing of NAME, no lease operation) and prints
one line on stdout that begins with the state, followed by perfdata:

  OK        the last run that succeeded ended within -c AGE (and -w AGE),
            and no run after it failed (exit 0)
  WARNING   it ended within -c but not within -w; or a later run failed: a
            non-zero exit, or a run that lost its lease before recording
            its end (exit 1)
  CRITICAL  no run ended with status 0 within -c, or ever; or, on a lease
            run with --schedule, an occurrence never started although a
            later one is due, or did not start within --starting-deadline
            (exit 2)
  UNKNOWN   the storage cannot be read, or gave no answer within -t; or a
            usage error (exit 3)

Ages are by the storage service's clock (the listing's Date), never this
host's. A bare number is seconds (-c 93600 is -c 26h). Give
--starting-deadline the value the scheduled line has. -v adds the schedule
and the count of recorded runs to the line; -vv adds a line per recorded run
after it. These exit statuses are the plugins' convention, not leaderrun's
usual 64 and 69.`,
		Example: `  # WARNING after 25 hours without a successful run, CRITICAL after 26
  leaderrun check -l cron/report -w 25h -c 26h

  # Nagios / Icinga 1.x
  define command {
    command_name  check_leaderrun
    command_line  /usr/bin/leaderrun check -l $ARG1$ -w $ARG2$ -c $ARG3$
  }`,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.complete(c.Flags()); err != nil {
				return checkUsage(err)
			}
			return runCheck(c.Context(), a, o)
		},
	}
	usageErrorsAs(c, a, checkUsage)
	o.addFlags(c.Flags())
	return c
}

func (o *checkOptions) addFlags(fs *pflag.FlagSet) {
	o.loc.addFlags(fs)
	fs.DurationVarP(&o.warning, "warning", "w", 0, "WARNING unless a run ended with status 0 less than `AGE` ago")
	fs.DurationVarP(&o.critical, "critical", "c", 0, "CRITICAL unless a run ended with status 0 less than `AGE` ago (required)")
	fs.DurationVar(&o.maxAge, "max-age", 0, "the same as -c `AGE`")
	fs.DurationVarP(&o.timeout, "timeout", "t", o.timeout, "UNKNOWN when the storage gives no answer within `SECONDS`")
	fs.DurationVar(&o.deadline, "starting-deadline", 0, "CRITICAL when a scheduled occurrence did not start within `DURATION`")
	fs.CountVarP(&o.verbose, "verbose", "v", "more detail: -v on the line, -vv a line per recorded run")
}

func (o *checkOptions) complete(fs *pflag.FlagSet) error {
	if err := o.loc.complete(fs); err != nil {
		return err
	}
	switch {
	case fs.Changed("critical") && fs.Changed("max-age"):
		return fmt.Errorf("-c and --max-age are one setting: give one of them")
	case fs.Changed("max-age"):
		o.critical = o.maxAge
	case !fs.Changed("critical"):
		return fmt.Errorf("missing -c AGE: how long ago the last successful run may have ended")
	}
	if o.critical <= 0 {
		return fmt.Errorf("invalid -c %s: must be more than 0", o.critical)
	}
	if fs.Changed("warning") && (o.warning <= 0 || o.warning >= o.critical) {
		return fmt.Errorf("invalid -w %s: must be more than 0 and less than -c %s", o.warning, o.critical)
	}
	if o.timeout <= 0 {
		return fmt.Errorf("invalid -t %s: must be more than 0", o.timeout)
	}
	if o.deadline < 0 {
		return fmt.Errorf("invalid --starting-deadline %s: must not be negative", o.deadline)
	}
	return nil
}

// checkUsage is a usage error of check: UNKNOWN.
func checkUsage(err error) error {
	return &pluginExit{res: checkUnknown(fmt.Errorf("usage: %w (see 'leaderrun check --help')", err))}
}

func runCheck(ctx context.Context, a *app, o *checkOptions) error {
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	_, v, err := o.loc.view(rctx, a.log)
	if err != nil {
		if errors.Is(rctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer from the storage service within %s (-t)", o.timeout)
		}
		return &pluginExit{res: checkUnknown(err)}
	}
	in := checkInput{Runs: v.Runs(), LastSuccess: v.LastSuccess(), Now: v.Date,
		Warning: o.warning, Critical: o.critical, StartingDeadline: o.deadline, Verbose: o.verbose}
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
	stateWarning  checkState = 1 // the last success is older than -w, or a later run failed (non-zero exit, or lost its lease before recording its end)
	stateCritical checkState = 2 // no run ended with status 0 within -c, or ever; or a scheduled occurrence that did not start
	stateUnknown  checkState = 3 // storage unreadable or too slow, a usage error, or no Date from the service: no age can be told
)

func (s checkState) String() string {
	return [...]string{stateOK: "OK", stateWarning: "WARNING", stateCritical: "CRITICAL", stateUnknown: "UNKNOWN"}[s]
}

// checkInput is what check decides from.
type checkInput struct {
	Runs        []lease.Run   // newest start first: lease.View.Runs, every slot's history merged
	LastSuccess *lease.Run    // lease.LastSuccess (the newest across slots); nil if none recorded
	Now         time.Time     // the service's Date header of the read
	Warning     time.Duration // -w; 0: none, else below Critical (the caller refuses others as usage errors)
	Critical    time.Duration // -c (--max-age); the caller refuses values ≤ 0
	// Schedule, of a lease run with --schedule (nil if not): an
	// occurrence that never started although a later one is due, or
	// that did not start within StartingDeadline (0: no limit), makes it
	// CRITICAL.
	Schedule         *scheduleView
	StartingDeadline time.Duration
	Verbose          int // -v: 1 adds the schedule and the runs' count to the line; 2 or more a line per run
}

// checkResult is check's answer: exit with State, print Line on stdout: one
// line (no newline), and at -vv more lines after it, joined by newlines.
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
// perfdata: `age=<s>s;<-w s>;<-c s>` (U when there is no success; the
// warning empty without -w) and `last_exit=<code>` of the newest run that
// is over (U when lost or none).
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
	case age > in.Critical:
		state = stateCritical
		fmt.Fprintf(&b, "no run ended with status 0 within %s: the last successful run ended %s ago %s",
			in.Critical, age, onTerm(succ.Holder, succ.Term))
	case in.Warning > 0 && age > in.Warning:
		state = stateWarning
		fmt.Fprintf(&b, "no run ended with status 0 within %s: the last successful run ended %s ago %s",
			in.Warning, age, onTerm(succ.Holder, succ.Term))
	default:
		fmt.Fprintf(&b, "last successful run ended %s ago %s", age, onTerm(succ.Holder, succ.Term))
	}
	switch {
	case len(failed) > 0 && state == stateOK:
		state = stateWarning
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
	if v := in.Schedule; v != nil {
		if late := scheduleProblem(v, in.StartingDeadline, in.Now); late != "" {
			state = stateCritical
			text = late + "; " + text
		}
		if in.Verbose > 0 {
			text += "; " + scheduleDetail(v, in.Now)
		}
	}
	if in.Verbose > 0 {
		text += "; " + runsDetail(in.Runs)
	}
	line := state.String() + ": " + oneLine(text) + " | " + perfdata(age, in.Warning, in.Critical, in.Runs)
	if in.Verbose > 1 {
		for _, r := range in.Runs {
			line += "\n" + oneLine(runLine(r, in.Now))
		}
	}
	return checkResult{State: state, Line: line}
}

// scheduleProblem says what makes a scheduled lease CRITICAL ("" if
// nothing): the first occurrence after the one last started never started
// although a later one is due (it never will: only the latest runs), or
// it is due and older than the starting deadline.
func scheduleProblem(v *scheduleView, deadline time.Duration, now time.Time) string {
	var what string
	switch {
	case !v.missed.IsZero():
		what = fmt.Sprintf("the occurrence %s of schedule %q never started", rfc3339(v.missed), v.spec)
	case !v.due.IsZero() && deadline > 0 && now.Sub(v.due) > deadline:
		what = fmt.Sprintf("the occurrence %s of schedule %q did not start within --starting-deadline %s", rfc3339(v.due), v.spec, deadline)
	default:
		return ""
	}
	if v.notStarted > 1 {
		n := strconv.Itoa(v.notStarted)
		if v.notStarted >= schedule.MaxBetween {
			n = "at least " + n
		}
		what += fmt.Sprintf(" (%s occurrences since the last started one did not start)", n)
	}
	return what
}

// scheduleDetail is -v's account of a scheduled lease.
func scheduleDetail(v *scheduleView, now time.Time) string {
	d := fmt.Sprintf("schedule %q: occurrence %s started last", v.spec, rfc3339(v.last))
	if v.last.IsZero() {
		d = fmt.Sprintf("schedule %q: no occurrence started", v.spec)
	}
	if !v.due.IsZero() {
		d += fmt.Sprintf(", %s due and not started yet", at(v.due, now))
	}
	if !v.next.IsZero() {
		d += ", next " + rfc3339(v.next)
	}
	return d
}

// runsDetail is -v's count of the recorded runs.
func runsDetail(runs []lease.Run) string {
	failed := 0
	for _, r := range runs {
		if r.Failed() {
			failed++
		}
	}
	return fmt.Sprintf("%d runs recorded, %d failed", len(runs), failed)
}

// runLine is -vv's line for one recorded run.
func runLine(r lease.Run, now time.Time) string {
	l := fmt.Sprintf("run %s: started %s", onTerm(r.Holder, r.Term), at(r.Start, now))
	switch {
	case r.Running:
		return l + ", running"
	case r.EndUnknown():
		return l + ", lost its lease before recording its end"
	case r.ExitCode == nil:
		return l + ", ended " + at(r.End, now)
	}
	return fmt.Sprintf("%s, ended %s, exit %d", l, at(r.End, now), *r.ExitCode)
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

// perfdata: age of the last success in seconds (warning above -w, none
// without it; critical above -c), and the exit status of the newest run
// that is over.
func perfdata(age, warning, critical time.Duration, runs []lease.Run) string {
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
	w := ""
	if warning > 0 {
		w = strconv.FormatInt(int64(warning.Round(time.Second)/time.Second), 10)
	}
	return fmt.Sprintf("age=%s;%s;%d last_exit=%s", a, w, int64(critical.Round(time.Second)/time.Second), exit)
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
