package leader

// Waiting for the lease: the acquire, what a waiting follower reports (the
// deputy's place taken, readiness: ready.go), a terminating signal that
// ends the wait, the exit status of a wait that acquired nothing, COMMAND's
// guard started meanwhile (the head start), and the runs that skip
// (--once-per, --once, --once-per-host, --schedule).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/runner"
	"github.com/leaderrun/leaderrun/schedule"
)

// forLease acquires the lease; a terminating signal ends the wait at once.
// It returns a nil lease when the run is skipped (--once-per, --once,
// --once-per-host, --schedule), and an error with the exit status and the
// one line that says why when it acquired nothing. While a scheduled event
// concerns this VM (--scheduled-events) it does not acquire.
func (inv *invocation) forLease(ctx context.Context) (*lease.Lease, error) {
	log, o, sd, hs, name := inv.log, inv.o, inv.sd, inv.hs, inv.o.Client.Name()
	waitCtx, cancelWait := context.WithCancel(ctx)
	var waitSig syscall.Signal
	waitDone := make(chan struct{})
	go func() {
		defer close(waitDone)
		for {
			select {
			case s := <-inv.sigs:
				if s == watchdogSignal {
					log.Error("the systemd watchdog fired (SIGABRT): ending the wait; nothing ran", "lease", exit.Cut(name))
				}
				if terminating(s) || s == watchdogSignal {
					waitSig = s.(syscall.Signal)
					cancelWait()
					return
				}
				log.Debug("signal ignored while waiting", "signal", s)
			case <-waitCtx.Done():
				return
			}
		}
	}()
	// waiting reports a wait (held, or held back) until the next try. A
	// follower keeps no guard while it waits; the deputy keeps one ready,
	// so that taking over never waits for a process to start. systemd's
	// STATUS also says when this host stands by as the deputy, and when it
	// is not ready (--ready-cmd): what `status` cannot show of every host.
	var (
		deputy         bool
		waitingFor     string // why it waits, as STATUS last said
		notReadyStatus string // --ready-cmd's reason not to lead; "" ready
	)
	statusNow := func() {
		switch {
		case notReadyStatus != "":
			sd.status("waiting: " + notReadyStatus)
		case deputy:
			sd.status("waiting as the deputy: " + waitingFor)
		default:
			sd.status("waiting: " + waitingFor)
		}
	}
	waiting := func(status, key, value string) {
		if !deputy {
			hs.discard()
		}
		log.Info("waiting for the lease", "lease", exit.Cut(name), key, value)
		sd.waiting()
		waitingFor = status
		statusNow()
	}
	// --splay: a random wait in [0, Splay) before the first request, so
	// that a fleet whose clocks start it in the same second spreads out.
	if o.Splay > 0 {
		wait := rand.N(o.Splay)
		if o.Lease.Rand != nil { // a test's seed: drawn before the lease draws from it
			wait = time.Duration(rand.New(o.Lease.Rand).Int64N(int64(o.Splay)))
		}
		log.Debug("splay: waiting before the first request", "wait", wait)
		select {
		case <-time.After(wait):
		case <-waitCtx.Done(): // a terminating signal
			cancelWait()
			<-waitDone
			if waitSig == 0 {
				return nil, ctx.Err()
			}
			return nil, stoppedBy(waitSig, "during --splay; nothing ran, nothing is held")
		}
	}
	var ready func(context.Context) string
	if r := newReadiness(log, o); r != nil {
		ready = func(ctx context.Context) string {
			why := r.ask(ctx)
			if why != notReadyStatus {
				notReadyStatus = why
				statusNow()
			}
			return why
		}
	}
	l, err := inv.elector.Acquire(waitCtx, lease.WaitOptions{
		NoWait: o.NoWait,
		// --no-wait -E 0 -q: held and skipped end alike and silently, so a
		// losing contender need not read who holds the lease.
		HeldIsEnough: o.NoWait && o.ConflictCode == exit.OK && !log.IsInfo(),
		// After a splay the run of this tick has likely started: read first.
		// So does a scheduled invocation: most find nothing due.
		ReadFirst:      o.Splay > 0 || o.Schedule != nil,
		Timeout:        o.Timeout,
		StorageTimeout: o.StorageTimeout,
		OncePer:        o.OncePer,
		Once:           o.Once,
		OncePerHost:    o.OncePerHost,
		Schedule:       o.leaseSchedule(),
		OnTry:          hs.prepare,
		OnWait: func(p *lease.Properties) {
			held := heldText(&lease.HeldError{Holder: p.Holder, Since: p.AcquiredAt, Term: p.Term, Stale: lease.StaleHolder(p)}, o.Lease.Identity)
			waiting("held by "+held, "holder", held)
		},
		// Held back by a scheduled event for this VM (events.go), or by a
		// pause (`leaderrun pause`, checked inside lease).
		Hold:   holdFunc(inv.events),
		OnHold: func(reason string) { waiting(reason, "reason", reason) },
		Ready:  ready,
		// The deputy: a waiting follower that reads the lease every
		// DeputyPoll while it holds the place (lease's deputy.go).
		Deputy: o.DeputyPoll,
		OnDeputy: func(standing bool) {
			deputy = standing
			statusNow()
			if standing {
				hs.prepare()
				log.Info("standing by as the deputy: taking the lease over as soon as it is free", "lease", name, "poll_interval", o.DeputyPoll)
				return
			}
			hs.discard()
			log.Debug("no longer the deputy", "lease", name)
		},
	})
	cancelWait()
	<-waitDone
	var skip *lease.SkipError
	var held *lease.HeldError
	switch {
	case errors.As(err, &skip):
		logSkip(log, o, skip)
		return nil, nil
	case o.Schedule != nil && errors.As(err, &held) && held.Reason == "" && waitSig == 0:
		// An earlier run still holds the lease: quietly; the next
		// invocation tries again while the occurrence is due. A pause or
		// a scheduled event holding it off is not quiet (below).
		log.Debug("the lease is held (an earlier run still going?): the next invocation tries again", "holder", held.Holder)
		return nil, nil
	case waitSig != 0 && errors.Is(err, context.Canceled):
		return nil, stoppedBy(waitSig, fmt.Sprintf("while waiting for lease %s; nothing ran", exit.Quote(name)))
	case errors.As(err, &held):
		why := "--no-wait"
		if !o.NoWait {
			why = fmt.Sprintf("--timeout %s passed", o.Timeout)
		}
		if held.Reason != "" { // kept off by a pause or a scheduled event
			return nil, exit.With(o.ConflictCode, fmt.Errorf("lease %s not acquired: %s (%s)", exit.Quote(name), held.Reason, why))
		}
		return nil, exit.With(o.ConflictCode, fmt.Errorf("lease %s is held by %s; not acquired (%s)", exit.Quote(name), heldText(held, o.Lease.Identity), why))
	case err != nil:
		return nil, StorageExit(err)
	case waitSig != 0:
		// The signal came as the acquire succeeded: the wait ends as if it
		// had come a moment sooner, and the lease goes back unused.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		if rerr := l.ReleaseUnused(rctx); rerr != nil {
			log.Warn("could not release the lease; it expires by itself", "error", rerr)
		}
		return nil, stoppedBy(waitSig, fmt.Sprintf("while acquiring lease %s; nothing ran, the lease was released", exit.Quote(name)))
	}
	switch c := l.Cause; {
	case c == nil:
	case c.Trigger == lease.TriggerManual:
		log.Info("running a trigger", "by", exit.Cut(c.By), "reason", exit.Cut(c.Reason), "at", rfc3339(c.Occurrence))
	case c.Trigger == lease.TriggerRetry:
		log.Info("retrying an occurrence that failed", "occurrence", rfc3339(c.Occurrence), "attempt", c.Attempt, "attempts", o.Retries+1)
	}
	return l, nil
}

// stoppedBy is the end of a wait that sig stopped: leaderrun ends by sig,
// as a wrapper does, after one line at info level: a stop asked from
// outside (systemctl stop of a follower, Ctrl-C) is no error.
// The watchdog's signal was logged as it came, at error level.
func stoppedBy(sig syscall.Signal, when string) error {
	if sig == watchdogSignal {
		return exit.BySignal(sig, nil)
	}
	return exit.BySignal(sig, fmt.Errorf("stopped by %s %s", signalName(sig), when))
}

// heldText names the holder of a lease found held, as far as it is known.
// The metadata may predate the lease (a new holder writes its name a round
// trip after its acquire): then, or when it names this very identity, which
// does not hold the lease, the holder is not known yet.
func heldText(held *lease.HeldError, self string) string {
	holder := exit.Cut(held.Holder)
	switch {
	case held.Stale:
		if holder == "" {
			holder = "no holder"
		}
		return fmt.Sprintf("a holder not known yet (the metadata still names %s, whose run has ended)", holder)
	case held.Holder != "" && held.Holder == self:
		return fmt.Sprintf("a holder not known yet (the metadata names this identity, %s, from an earlier term)", holder)
	case holder == "":
		holder = "another holder"
	}
	if held.Since.IsZero() {
		return holder
	}
	return holder + " since " + rfc3339(held.Since)
}

// headStart starts COMMAND's guard (runner.Prepare) right before each
// acquire request, so that the guard's start, a whole process's, overlaps
// the storage round trips instead of following them; COMMAND itself starts
// once the lease is held. The guard is discarded when the wait for a held
// lease begins, and when leaderrun ends without running COMMAND; the
// deputy prepares one when it takes its place and keeps it while it
// stands by, so that its take-over waits for no process's start.
type headStart struct {
	log      hclog.Logger
	launcher Launcher
	cfg      runner.Config
	prepared Prepared
	failed   bool // Prepare failed: start from scratch, which reports why
}

func (h *headStart) prepare() {
	if h.prepared != nil || h.failed {
		return
	}
	p, err := h.launcher.Prepare(h.cfg)
	if err != nil {
		// COMMAND was looked up before: removed since, or the guard could
		// not start. start tries again and reports it with the run recorded.
		h.failed = true
		h.log.Debug("no head start for the command", "error", err)
		return
	}
	h.prepared = p
}

func (h *headStart) discard() {
	if h.prepared != nil {
		h.prepared.Discard()
		h.prepared = nil
	}
}

// deadlines are a held lease's, read when asked (a renewal moves them).
type deadlines interface {
	StopAt() time.Time
	KillBy() time.Time
}

// errPastStopDeadline: the go-ahead would have come at or after the lease's
// stop deadline (a guard slow to start, a leaderrun starved): nothing ran.
var errPastStopDeadline = errors.New("the lease's stop deadline passed before the command could start")

// start starts COMMAND with env and the kill deadline already in force from
// its first instant: in the prepared guard if there is one and it works,
// otherwise in a new one, prepared the same way (the deadline before the
// go-ahead, never after the start), and never at or after the lease's stop
// deadline (errPastStopDeadline).
func (h *headStart) start(env []string, d deadlines) (Process, error) {
	if p := h.prepared; p != nil {
		h.prepared = nil
		proc, err := launch(p, env, d)
		if err == nil || errors.Is(err, errPastStopDeadline) {
			return proc, err
		}
		h.log.Warn("the command's prepared guard failed; starting it anew", "error", err)
	}
	p, err := h.launcher.Prepare(h.cfg)
	if err != nil {
		return nil, err
	}
	return launch(p, env, d)
}

// launch hands p its kill deadline, then, before the stop deadline, the
// go-ahead; p is discarded if either fails, so that COMMAND never runs
// without the deadline, nor on a lease about to be given up.
func launch(p Prepared, env []string, d deadlines) (Process, error) {
	err := p.SetKillDeadline(d.KillBy())
	if err == nil && !time.Now().Before(d.StopAt()) {
		err = errPastStopDeadline
	}
	if err == nil {
		var proc Process
		if proc, err = p.Launch(env); err == nil {
			return proc, nil
		}
	}
	p.Discard()
	return nil, err
}

// leaseSchedule is the schedule as the lease asks it (lease.Schedule): the
// decision is schedule.DecideRetry's, on what the lease blob records.
type leaseSchedule struct {
	s        *schedule.Schedule
	deadline time.Duration
	retries  schedule.Retries
}

func (l leaseSchedule) String() string { return l.s.String() }

func (l leaseSchedule) Due(p *lease.Properties) (lease.Due, *lease.SkipError) {
	last, cause := lastAttempt(p)
	d := l.s.DecideRetry(p.Date, p.Created, last, l.deadline, l.retries)
	due := lease.Due{Occurrence: d.Occurrence, Attempt: d.Attempt, Missed: -1}
	var reason lease.SkipReason
	switch d.Verdict {
	case schedule.Run:
		// The occurrences due since the one started last that never
		// started (none before the first).
		due.Missed = 0
		if !p.Occurrence.IsZero() {
			due.Missed = l.s.Between(p.Occurrence, d.Occurrence)
		}
		return due, nil
	case schedule.Retry:
		if cause != nil && cause.Missed >= 0 {
			due.Missed = cause.Missed // the occurrence's, as its first attempt had it
		}
		return due, nil
	case schedule.Lost:
		due.FoundLost, due.RetryAt = true, d.RetryAt
		return due, nil
	case schedule.Started:
		reason = lease.SkipStarted
	case schedule.Missed:
		reason = lease.SkipMissed
	case schedule.RetryLater:
		reason = lease.SkipRetryLater
	case schedule.GaveUp:
		reason = lease.SkipRetriesDone
	default:
		reason = lease.SkipNotDue
	}
	return due, &lease.SkipError{Reason: reason, Occurrence: d.Occurrence, Attempt: d.Attempt, RetryAt: d.RetryAt}
}

// lastAttempt is what p records of the occurrence last started, as the
// decision reads it, and the cause of that attempt's run (nil if none).
func lastAttempt(p *lease.Properties) (schedule.Attempt, *lease.Cause) {
	a := schedule.Attempt{Occurrence: p.Occurrence, Number: p.Attempt}
	r, lost := p.LastAttempt()
	switch {
	case r == nil || r.Running:
		a.Outcome = schedule.Going
	case r.Succeeded():
		a.Outcome = schedule.Succeeded
	case r.ExitCode != nil:
		a.Outcome, a.EndedAt = schedule.Failed, r.End
		if r.End.IsZero() {
			a.EndedAt = r.Start
		}
	case r.EndUnknown():
		a.Outcome, a.EndedAt = schedule.Vanished, lost
	}
	if r == nil {
		return a, nil
	}
	return a, r.Cause
}

// leaseSchedule is WaitOptions.Schedule: nil without --schedule.
func (o *Options) leaseSchedule() lease.Schedule {
	if o.Schedule == nil {
		return nil
	}
	return leaseSchedule{s: o.Schedule, deadline: o.StartingDeadline, retries: schedule.Retries{Max: o.Retries, Delay: o.RetryDelay}}
}

// logSkip says why an invocation ran nothing: a missed occurrence is the
// one WARNING; a scheduled invocation that finds nothing due says so at
// debug level, except the one that created the lease blob (its first
// use), which says at info when the first occurrence it will run is; the
// other skips at info.
func logSkip(log hclog.Logger, o *Options, skip *lease.SkipError) {
	switch skip.Reason {
	case lease.SkipMissed:
		log.Warn("missed: a scheduled occurrence never started and is past --starting-deadline; it will not run",
			"occurrence", rfc3339(skip.Occurrence), "schedule", o.Schedule.String(), "starting_deadline", o.StartingDeadline)
	case lease.SkipStarted:
		log.Debug("skipped: the occurrence due was already started", "occurrence", rfc3339(skip.Occurrence))
	case lease.SkipNotDue:
		if o.Client != nil && o.Client.CreatedHere() {
			// The occurrences due before the lease existed are not run, as
			// a new CronJob does not run them: a first run that does
			// nothing says why, once.
			args := []any{"lease", exit.Cut(o.Client.Name()), "schedule", o.Schedule.String()}
			if first := o.Schedule.Next(skip.Occurrence); !skip.Occurrence.IsZero() && !first.IsZero() {
				args = append(args, "first_run_at", rfc3339(first))
			}
			log.Info("nothing is due yet: the lease was just created, and a schedule runs only what falls due after that", args...)
			return
		}
		log.Debug("skipped: no occurrence of the schedule is due", "latest", rfc3339(skip.Occurrence))
	case lease.SkipRetryLater:
		log.Debug("skipped: the occurrence failed; its retry is not due yet", "occurrence", rfc3339(skip.Occurrence),
			"attempt", skip.Attempt, "retry_at", rfc3339(skip.RetryAt))
	case lease.SkipRetriesDone:
		log.Debug("skipped: the occurrence failed, and no retry is left", "occurrence", rfc3339(skip.Occurrence),
			"attempts", skip.Attempt, "retries", o.Retries)
	case lease.SkipOnce:
		args := []any{"succeeded_on", skip.Holder}
		if !skip.Start.IsZero() {
			args = append(args, "succeeded_at", rfc3339(skip.Start))
		}
		log.Info("skipped: a run already completed with status 0 (--once)", args...)
	case lease.SkipOncePerHost:
		log.Info("skipped: this host already completed a run with status 0 (--once-per-host)", "host", skip.Holder)
	case lease.SkipOncePer:
		log.Info("skipped: a run started within the --once-per window", "window", o.OncePer,
			"last_run_by", skip.Holder, "last_run_start", rfc3339(skip.Start))
	}
}

// rfc3339 is t in UTC as RFC 3339; "" for the zero time.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
