//go:build unix

package runner

// The health check of the running command, as Docker's HEALTHCHECK: its
// configuration, the loop that counts failures, and one check.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/leaderrun/leaderrun/runner/pdeath"
)

// Defaults of HealthConfig, those of Docker's HEALTHCHECK.
const (
	DefaultHealthInterval = 30 * time.Second
	DefaultHealthTimeout  = 10 * time.Second
	DefaultHealthRetries  = 3
)

const (
	// healthOutputMax is how much of a check's output is kept: its end.
	healthOutputMax = 4 << 10
	// healthOutputWait bounds the wait for a check's output once its group
	// is gone: a process that left it (setsid) may hold the pipe open.
	healthOutputWait = 250 * time.Millisecond
)

// HealthConfig configures a health check, with the names and meaning of
// Docker's HEALTHCHECK.
type HealthConfig struct {
	// Cmd is run with "/bin/sh -c Cmd" in a process group of its own, stdin
	// from /dev/null, stdout and stderr captured (never passed to
	// leaderrun's). Exit status 0 is a pass. Empty means no check.
	Cmd string
	// Interval is the time between the end of one check and the start of
	// the next; the first check starts Interval after StartHealth. Zero
	// means DefaultHealthInterval (see WithDefaults).
	Interval time.Duration
	// Timeout bounds a check: one still running then is killed (SIGKILL to
	// its group) and counts as failed. Zero means DefaultHealthTimeout.
	Timeout time.Duration
	// Retries is how many consecutive failures make the command unhealthy.
	// Zero means DefaultHealthRetries.
	Retries int
	// StartPeriod is an initial period, from StartHealth, in which failed
	// checks (by their start) do not count; a pass ends it early. Zero
	// means none.
	StartPeriod time.Duration
	// Env is the check's full environment; nil means os.Environ().
	Env []string
	// Logger receives the log, named "health": every result at debug, a
	// pass after counted failures at info, unhealthy at warn. Nil discards.
	Logger hclog.Logger
}

// WithDefaults returns c with a zero Interval, Timeout or Retries replaced by
// its default, as StartHealth does.
func (c HealthConfig) WithDefaults() HealthConfig {
	c.Interval = cmp.Or(c.Interval, DefaultHealthInterval)
	c.Timeout = cmp.Or(c.Timeout, DefaultHealthTimeout)
	c.Retries = cmp.Or(c.Retries, DefaultHealthRetries)
	return c
}

// Validate reports an Interval or Timeout not positive, Retries below 1, or
// a negative StartPeriod, whether Cmd is set or not. An explicit zero is
// refused: c.WithDefaults().Validate() makes it the default, as StartHealth.
func (c HealthConfig) Validate() error {
	switch {
	case c.Interval <= 0:
		return fmt.Errorf("runner: health check interval %v: must be positive", c.Interval)
	case c.Timeout <= 0:
		return fmt.Errorf("runner: health check timeout %v: must be positive", c.Timeout)
	case c.Retries < 1:
		return fmt.Errorf("runner: health check retries %d: must be at least 1", c.Retries)
	case c.StartPeriod < 0:
		return fmt.Errorf("runner: health check start period %v: must not be negative", c.StartPeriod)
	}
	return nil
}

// UnhealthyError reports that the health check failed Retries times in a
// row.
type UnhealthyError struct {
	Failures int // consecutive counted failures (Retries)
	// Last is why the last check failed: "exit status N", "signal: ...",
	// "timed out after D" or "could not start: ...".
	Last string
	// Output is the end (at most 4 KiB) of the last failed check's stdout
	// and stderr, interleaved as written, surrounding white space trimmed.
	Output string
}

func (e *UnhealthyError) Error() string {
	return "runner: health check failed " + strconv.Itoa(e.Failures) + " times in a row: " + e.Last
}

// StartHealth checks the command's health until ctx ends, as
// cfg.WithDefaults() says; it fails only when that is invalid.
//
// The channel receives one *UnhealthyError when Retries consecutive checks
// have failed, then is closed; if ctx ends first it is closed empty. Once a
// receive returns, no check is running: one under way when ctx ended has been
// killed (SIGKILL to its group) and reaped, so a caller that cancels ctx and
// receives once knows nothing is left. An empty Cmd checks nothing.
//
// Limits: what a check leaves in its group is killed when it ends, but a
// process that leaves the group (setsid) is out of reach. Processes stuck in
// the kernel after SIGKILL are waited for a few seconds, then given up on
// (logged). If leaderrun is killed during a check, the shell gets SIGKILL on
// Linux (parent-death signal), but what it started may finish on its own.
func StartHealth(ctx context.Context, cfg HealthConfig) (<-chan error, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ch := make(chan error, 1)
	if cfg.Cmd == "" {
		context.AfterFunc(ctx, func() { close(ch) })
		return ch, nil
	}
	cfg.Logger = cmp.Or(cfg.Logger, hclog.NewNullLogger()).Named("health")
	go cfg.loop(ctx, ch)
	return ch, nil
}

// checkResult is how one check went.
type checkResult struct {
	canceled bool   // ctx ended during the check: no result
	why      string // why it failed; "" when it passed (exit status 0)
	output   string
}

// loop runs the checks one at a time until ctx ends or the command is
// unhealthy, then closes ch. It, check and endGroup take c as StartHealth
// made it: defaults applied, Logger set.
func (c HealthConfig) loop(ctx context.Context, ch chan<- error) {
	defer close(ch)
	start := time.Now()
	passedOnce := false
	failures := 0
	next := time.NewTimer(c.Interval)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-next.C:
		}
		started := time.Now()
		res := c.check(ctx)
		took := time.Since(started).Round(time.Millisecond)
		switch {
		case res.canceled:
			c.Logger.Debug("health check stopped", "took", took)
			return
		case res.why == "": // passed
			c.Logger.Debug("health check passed", "took", took)
			if failures > 0 {
				c.Logger.Info("health check passing again", "after_failures", failures)
			}
			failures = 0
			passedOnce = true
		case !passedOnce && started.Sub(start) < c.StartPeriod:
			c.Logger.Debug("health check failed in the start period; not counted",
				"result", res.why, "took", took, "output", res.output)
		default:
			failures++
			c.Logger.Debug("health check failed", "result", res.why, "took", took,
				"failures", failures, "retries", c.Retries, "output", res.output)
			if failures >= c.Retries {
				// Debug: the caller says what it does about it, and the exit's one line why.
				c.Logger.Debug("command unhealthy: health check failed too many times in a row",
					"failures", failures, "last", res.why, "output", res.output)
				ch <- &UnhealthyError{Failures: failures, Last: res.why, Output: res.output}
				return
			}
		}
		next.Reset(c.Interval)
	}
}

// check runs the check once and returns when its group is gone (or given up
// on), the shell reaped.
func (c HealthConfig) check(ctx context.Context) checkResult {
	r, w, err := os.Pipe()
	if err != nil {
		return checkResult{why: "could not start: " + err.Error()}
	}
	cmd := &exec.Cmd{
		Path:        "/bin/sh",
		Args:        []string{"sh", "-c", c.Cmd},
		Env:         c.Env,
		Stdout:      w, // an *os.File: Wait does not wait for the output
		Stderr:      w,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	// The shell stays unreaped until its group has been killed and has
	// emptied, so that its pid, the group's id, cannot be reused meanwhile.
	// leaderrun's reaper leaves it to reapShell.
	var exited <-chan struct{}
	var reap func()
	reaped := make(chan struct{})
	err = ownReaper().start(func() (int, <-chan struct{}, error) {
		var err error
		if exited, reap, err = pdeath.StartUnreaped(cmd); err != nil {
			return 0, nil, err
		}
		return cmd.Process.Pid, reaped, nil
	})
	w.Close()
	if err != nil {
		r.Close()
		return checkResult{why: "could not start: " + err.Error()}
	}
	reapShell := func() {
		reap()
		close(reaped)
	}

	out := newTail(healthOutputMax)
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		_, _ = io.Copy(out, r)
	}()

	timeout, cancel := context.WithTimeout(ctx, c.Timeout)
	select {
	case <-exited:
	case <-timeout.Done():
	}
	cancel()
	inTime := false
	select {
	case <-exited:
		inTime = true // even if the timer or ctx fired at the same moment
	default:
	}

	// Whatever ended the wait, nothing of the check may outlive it: its
	// leftovers when the shell exited, the whole group when it did not.
	c.endGroup(cmd.Process.Pid, exited)
	select {
	case <-exited:
		reapShell()
	default:
		go reapShell() // stuck in the kernel after SIGKILL: reaped when it leaves
	}

	select {
	case <-outDone:
	case <-time.After(healthOutputWait):
		// Something outside the group holds the pipe: stop reading.
		r.Close()
		select {
		case <-outDone:
		case <-time.After(healthOutputWait):
		}
	}
	r.Close()
	res := checkResult{output: out.String()}

	switch {
	case ctx.Err() != nil:
		res.canceled = true
	case !inTime:
		res.why = "timed out after " + c.Timeout.String()
	case !cmd.ProcessState.Success():
		res.why = cmd.ProcessState.String()
	}
	return res
}

// endGroup sends SIGKILL to the check's group, waits for the shell (its
// leader) to exit, then for the group to be empty, within killWait. The
// caller reaps the shell after: until then its pid, which is the group's
// id, cannot be reused (on Linux; elsewhere the shell is already reaped and
// a reuse needs the pids to wrap in between).
func (c HealthConfig) endGroup(pgid int, exited <-chan struct{}) {
	kill := func() {
		if testHookKillCheck != nil {
			testHookKillCheck(pgid)
		}
		if err := signalGroup(pgid, unix.SIGKILL); err != nil {
			c.Logger.Warn("could not kill the health check's process group", "pgid", pgid, "error", err)
		}
	}
	killedAt := time.Now()
	kill()
	giveUp := time.NewTimer(killWait)
	defer giveUp.Stop()
	select {
	case <-exited:
	case <-giveUp.C:
		c.Logger.Warn("the health check's shell is still there after SIGKILL; giving up waiting for it",
			"pgid", pgid, "waited", killWait)
		return
	}
	group := &groupWatch{pgid: pgid}
	if group.alive() && !awaitEmpty(group, func() time.Time { return killedAt }, kill) {
		c.Logger.Warn("processes remain in the health check's group after SIGKILL; giving up waiting for them",
			"pgid", pgid, "waited", time.Since(killedAt).Round(time.Millisecond))
	}
}

// testHookKillCheck, when set by a test, is called before each SIGKILL to a
// check's group.
var testHookKillCheck func(pgid int)
