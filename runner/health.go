//go:build unix

// The health check of the running command, as Docker's HEALTHCHECK: its
// configuration, the loop that counts failures, and one check run in a
// process group of its own.

package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

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
	// healthOutputWait bounds the wait for the end of a check's output once
	// its group is gone: a process that left the group (setsid) may still
	// hold the pipe open.
	healthOutputWait = 250 * time.Millisecond
)

// HealthConfig configures a health check of the running command, with the
// names and meaning of Docker's HEALTHCHECK.
type HealthConfig struct {
	// Cmd is run with "/bin/sh -c Cmd", in a process group of its own, with
	// stdin from /dev/null and its stdout and stderr captured (never passed
	// to leaderrun's own). Exit status 0 is a pass, anything else a
	// failure. Empty means no check.
	Cmd string
	// Interval is the time between the end of one check and the start of
	// the next; the first check starts Interval after StartHealth. Zero
	// means DefaultHealthInterval (see WithDefaults).
	Interval time.Duration
	// Timeout bounds a check: one still running after Timeout is killed
	// (SIGKILL to its whole group) and counts as failed. Zero means
	// DefaultHealthTimeout.
	Timeout time.Duration
	// Retries is how many consecutive failures make the command unhealthy.
	// Zero means DefaultHealthRetries.
	Retries int
	// StartPeriod is an initial period, from StartHealth, during which
	// failed checks do not count; a check that passes ends it early. A
	// check counts as in the period when it started in it. Zero means none.
	StartPeriod time.Duration
	// Env is the check's full environment; nil means os.Environ().
	Env []string
	// Logger receives the checker's log, under the name "health": every
	// result at debug, the command becoming unhealthy at warn, a pass after
	// counted failures at info. Nil discards it.
	Logger hclog.Logger
}

// WithDefaults returns c with a zero Interval, Timeout or Retries replaced by
// its default. StartHealth applies it itself.
func (c HealthConfig) WithDefaults() HealthConfig {
	if c.Interval == 0 {
		c.Interval = DefaultHealthInterval
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultHealthTimeout
	}
	if c.Retries == 0 {
		c.Retries = DefaultHealthRetries
	}
	return c
}

// Validate reports a configuration that cannot be used: an Interval or a
// Timeout that is not positive, Retries below 1, a negative StartPeriod. The
// fields are checked whether Cmd is set or not, and as they are: an explicit
// zero is refused. Call c.WithDefaults().Validate() to have zero mean the
// default, as StartHealth does.
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
	// Failures is the number of consecutive counted failures (Retries).
	Failures int
	// Last is why the last check failed: "exit status N", "signal: ...",
	// "timed out after D" or "could not start: ...".
	Last string
	// Output is the end (at most 4 KiB) of the last failed check's stdout
	// and stderr, interleaved as written, with surrounding white space
	// trimmed.
	Output string
}

func (e *UnhealthyError) Error() string {
	return "runner: health check failed " + strconv.Itoa(e.Failures) + " times in a row: " + e.Last
}

// StartHealth checks the command's health until ctx ends, as cfg (with
// WithDefaults applied) says; it returns an error only when cfg is invalid.
//
// The returned channel receives one *UnhealthyError when Retries consecutive
// checks have failed, and is then closed; when ctx ends first, it is closed
// without a value. Either way, once a receive from it returns, the checker
// has stopped and no check is running: one under way when ctx ended has been
// killed (SIGKILL to its group) and reaped. So a caller that cancels ctx and
// then receives once knows nothing of the checker is left. With an empty
// Cmd nothing is checked and the channel is closed when ctx ends.
//
// Limits: what a check leaves running in its group is killed when the check
// ends, but a process that leaves the group (setsid, a daemon) is out of
// reach. A check whose processes stay stuck in the kernel after SIGKILL is
// waited for a few seconds, then given up on (logged). If leaderrun itself
// is killed while a check runs, the check's shell gets SIGKILL on Linux (a
// parent-death signal), but what it started may finish on its own.
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
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	h := &healthChecker{cfg: cfg, log: log.Named("health")}
	go h.loop(ctx, ch)
	return ch, nil
}

type healthChecker struct {
	cfg HealthConfig
	log hclog.Logger
}

// checkResult is how one check went.
type checkResult struct {
	started  time.Time
	canceled bool   // ctx ended during the check: no result
	passed   bool   // exit status 0
	why      string // why it failed
	output   string
}

// loop runs the checks, one at a time, until ctx ends or the command is
// unhealthy, and closes ch when it returns.
func (h *healthChecker) loop(ctx context.Context, ch chan<- error) {
	defer close(ch)
	start := time.Now()
	passedOnce := false
	failures := 0
	next := time.NewTimer(h.cfg.Interval)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-next.C:
		}
		res := h.check(ctx)
		took := time.Since(res.started).Round(time.Millisecond)
		switch {
		case res.canceled:
			h.log.Debug("health check stopped", "took", took)
			return
		case res.passed:
			h.log.Debug("health check passed", "took", took)
			if failures > 0 {
				h.log.Info("health check passing again", "after_failures", failures)
			}
			failures = 0
			passedOnce = true
		case !passedOnce && res.started.Sub(start) < h.cfg.StartPeriod:
			h.log.Debug("health check failed in the start period; not counted",
				"result", res.why, "took", took, "output", res.output)
		default:
			failures++
			h.log.Debug("health check failed", "result", res.why, "took", took,
				"failures", failures, "retries", h.cfg.Retries, "output", res.output)
			if failures >= h.cfg.Retries {
				h.log.Warn("command unhealthy: health check failed too many times in a row",
					"failures", failures, "last", res.why, "output", res.output)
				ch <- &UnhealthyError{Failures: failures, Last: res.why, Output: res.output}
				return
			}
		}
		next.Reset(h.cfg.Interval)
	}
}

// check runs the check once, in a process group of its own, and returns when
// the group is gone (or has been given up on), the check's shell reaped.
func (h *healthChecker) check(ctx context.Context) checkResult {
	res := checkResult{started: time.Now()}
	r, w, err := os.Pipe()
	if err != nil {
		res.why = "could not start: " + err.Error()
		return res
	}
	cmd := &exec.Cmd{
		Path:        "/bin/sh",
		Args:        []string{"sh", "-c", h.cfg.Cmd},
		Env:         h.cfg.Env,
		Stdout:      w, // an *os.File: Wait does not wait for the output
		Stderr:      w,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	// On Linux the shell gets a parent-death signal (see pdeath).
	exited, err := pdeath.Start(cmd)
	w.Close()
	if err != nil {
		r.Close()
		res.why = "could not start: " + err.Error()
		return res
	}
	pgid := cmd.Process.Pid

	out := &tailBuffer{max: healthOutputMax}
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		_, _ = io.Copy(out, r)
	}()

	timeout := time.NewTimer(h.cfg.Timeout)
	select {
	case <-exited:
	case <-timeout.C:
	case <-ctx.Done():
	}
	timeout.Stop()
	inTime := false
	select {
	case <-exited:
		inTime = true // even if the timer or ctx fired at the same moment
	default:
	}

	// Whatever ended the wait, nothing of the check may outlive it: its
	// leftovers when the shell exited, the whole group when it did not.
	h.endGroup(pgid, exited)

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
	res.output = out.String()

	switch {
	case ctx.Err() != nil:
		res.canceled = true
	case !inTime:
		res.why = "timed out after " + h.cfg.Timeout.String()
	case cmd.ProcessState.Success():
		res.passed = true
	default:
		res.why = cmd.ProcessState.String()
	}
	return res
}

// endGroup sends SIGKILL to the check's group, waits for the shell (which
// leads the group) to be reaped, then for the group to be empty (see
// awaitEmpty). The whole wait is bounded by killWait.
//
// When the shell has already exited and been reaped, its pid can only have
// been reused as a group id if the group is empty and the pid space has
// wrapped around since: a process group's id is not reused while the group
// has a member.
func (h *healthChecker) endGroup(pgid int, exited <-chan struct{}) {
	kill := func() {
		if err := signalGroup(pgid, unix.SIGKILL); err != nil {
			h.log.Warn("could not kill the health check's process group", "pgid", pgid, "error", err)
		}
	}
	killedAt := time.Now()
	kill()
	giveUp := time.NewTimer(killWait)
	defer giveUp.Stop()
	select {
	case <-exited:
	case <-giveUp.C:
		h.log.Warn("the health check's shell is still there after SIGKILL; giving up waiting for it",
			"pgid", pgid, "waited", killWait)
		return
	}
	group := groupWatch{pgid: pgid}
	if group.alive() && !group.awaitEmpty(func() time.Time { return killedAt }, kill) {
		h.log.Warn("processes remain in the health check's group after SIGKILL; giving up waiting for them",
			"pgid", pgid, "waited", time.Since(killedAt).Round(time.Millisecond))
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
	cut bool // bytes were dropped from the front
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		t.cut = t.cut || len(t.buf) > 0 || len(p) > t.max
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.cut = true
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns what is kept, without a partial character at the front when
// the front was cut, and with surrounding white space trimmed.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if t.cut {
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.TrimSpace(string(b))
}
