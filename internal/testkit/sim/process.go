package sim

// process.go: COMMAND as a fake process behind leader's Launcher seam. Its
// guard keeps what the real one promises (runner's own tests prove those
// promises on real processes): COMMAND starts only with its kill deadline
// in force, is SIGKILLed when that deadline passes unless moved, and when
// leaderrun dies (the lifeline). It lives outside leaderrun: a frozen
// leaderrun freezes none of it.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/runner"
)

// launcher is one invocation's leader.Launcher.
type launcher struct {
	inv *invocation
}

var errDead = errors.New("sim: this leaderrun was killed")

func (l launcher) Lookup(string) error { return nil }

// Prepare starts a guard; now and then one fails to start, or dies before
// its go-ahead (Launch then fails), as a real one can.
func (l launcher) Prepare(cfg runner.Config) (leader.Prepared, error) {
	if !l.inv.gate() {
		return nil, errDead
	}
	r := l.inv.jobRand()
	if r.IntN(20) == 0 {
		return nil, errors.New("sim: the guard could not start")
	}
	return &guard{inv: l.inv, cfg: cfg, dies: r.IntN(20) == 0}, nil
}

// guard is a prepared COMMAND, then its Process.
type guard struct {
	inv *invocation
	cfg runner.Config

	dies     bool // it dies before its go-ahead
	mu       sync.Mutex
	deadline time.Time // the kill deadline; zero: none given yet
	hasDL    bool
	state    int // 0 prepared, 1 launched, 2 discarded
	c        *child
}

func (g *guard) SetKillDeadline(t time.Time) error {
	if !g.inv.gate() {
		return nil // a dead leaderrun sends nothing; the lifeline did its work
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch g.state {
	case 0:
		g.deadline, g.hasDL = t, true
	case 1:
		g.c.setDeadline(t)
	}
	return nil
}

func (g *guard) Discard() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == 0 {
		g.state = 2
	}
}

func (g *guard) Launch(env []string) (leader.Process, error) {
	if !g.inv.gate() {
		return nil, errDead
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != 0 {
		return nil, errors.New("sim: prepared command already launched or discarded")
	}
	if g.dies {
		g.state = 2
		return nil, errors.New("sim: the prepared guard has gone")
	}
	g.state = 1
	w := g.inv.w
	c := &child{
		g: g, inv: g.inv, env: parseEnv(env), done: make(chan struct{}),
		at: time.Now(), deadline: g.deadline, pid: w.nextPid(),
		cmds: make(chan func()),
	}
	g.c = c
	if !g.hasDL {
		w.violate("COMMAND of %s launched without a kill deadline in force", g.inv.id)
	} else if !time.Now().Before(g.deadline) {
		// Past the deadline: the guard never starts COMMAND (as runner's).
		c.res = runner.Result{ExitCode: -1, Signal: syscall.SIGKILL}
		close(c.done)
		w.tracef("%s: the guard refused to start COMMAND: past its kill deadline", g.inv.id)
		return c, nil
	}
	g.inv.mu.Lock()
	unready := g.inv.unready
	g.inv.mu.Unlock()
	if unready {
		w.violate("COMMAND of %s launched while its --ready-cmd failed", g.inv.id)
	}
	c.launched = true
	c.behave(g.inv.jobRand())
	w.launched(c)
	go c.run()
	return c, nil
}

// child is COMMAND: it runs until it exits by itself, a stop signal ends
// it (unless deaf to it), or SIGKILL does; its death is confirmed when Done
// closes (a real group is then empty).
type child struct {
	g        *guard
	inv      *invocation
	env      map[string]string
	pid      int
	at       time.Time // launched
	diedAt   time.Time
	launched bool

	runFor   time.Duration // it exits by itself after this long
	code     int           // with this status
	deaf     bool          // it ignores the stop signal
	stopTake time.Duration // how long it takes to stop once asked
	killTake time.Duration // how long SIGKILL takes to land

	cmds chan func() // run on the child's goroutine

	// The child goroutine's own state.
	exitAt     time.Time     // it exits by itself, or of the stop signal, then
	exitRes    runner.Result // with this result
	deadline   time.Time     // the guard's kill deadline
	killAt     time.Time     // SIGKILL due (the grace timer); zero: none
	killed     bool          // SIGKILL sent
	dieAt      time.Time     // when SIGKILL lands
	stopping   bool          // a stop signal arrived
	interrupts int           // SIGINTs from outside

	res  runner.Result
	done chan struct{}
}

// behave draws what COMMAND does.
func (c *child) behave(r *rand.Rand) {
	w := c.inv.w
	quiet := w.since() >= w.plan.FaultEnd
	switch w.plan.Mode {
	case ModeServe, ModeSlots:
		c.runFor = time.Duration(10+r.IntN(190)) * time.Second
	case ModeOncePer:
		c.runFor = time.Duration(1+r.IntN(40)) * time.Second
		if quiet {
			c.runFor = time.Duration(1+r.IntN(20)) * time.Second
		}
	case ModeSchedule:
		c.runFor = time.Duration(1+r.IntN(int(w.plan.Period/time.Second))) * time.Second
		if quiet {
			c.runFor = time.Duration(1+r.IntN(int(w.plan.Period/time.Second/3))) * time.Second
		}
	default:
		c.runFor = time.Duration(1+r.IntN(30)) * time.Second
		if quiet {
			c.runFor = time.Duration(1+r.IntN(10)) * time.Second
		}
	}
	if !quiet && r.IntN(4) == 0 {
		c.code = 1 + r.IntN(3)
	}
	// With --retries, a COMMAND fails now and then after the faults too,
	// so that a retry that is due must come (drawn apart: other seeds'
	// COMMANDs stay as they were).
	if quiet && w.plan.Retries > 0 && stream(w.plan.Seed, "fails", c.inv.id, c.pid).IntN(3) == 0 {
		c.code = 1
	}
	c.deaf = r.IntN(5) == 0
	c.stopTake = time.Duration(r.Int64N(int64(3 * time.Second)))
	c.killTake = time.Duration(r.Int64N(int64(300 * time.Millisecond)))
	c.exitAt, c.exitRes = c.at.Add(c.runFor), runner.Result{ExitCode: c.code}
}

func (c *child) run() {
	for {
		next := c.exitAt
		if c.killed {
			next = c.dieAt
		} else {
			if !c.deadline.IsZero() && c.deadline.Before(next) {
				next = c.deadline
			}
			if !c.killAt.IsZero() && c.killAt.Before(next) {
				next = c.killAt
			}
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case f := <-c.cmds:
			timer.Stop()
			f()
			continue
		case <-timer.C:
		}
		now := time.Now()
		switch {
		case c.killed && !now.Before(c.dieAt):
			c.die(now, runner.Result{ExitCode: -1, Signal: syscall.SIGKILL})
			return
		case c.killed:
		case !now.Before(c.exitAt):
			c.die(now, c.exitRes)
			return
		case !c.deadline.IsZero() && !now.Before(c.deadline):
			c.inv.w.tracef("%s: the guard's kill deadline passed: SIGKILL", c)
			c.sigkill(now)
		case !c.killAt.IsZero() && !now.Before(c.killAt):
			c.sigkill(now)
		}
	}
}

func (c *child) sigkill(now time.Time) {
	if !c.killed {
		c.killed, c.dieAt = true, now.Add(c.killTake)
	}
}

func (c *child) die(now time.Time, res runner.Result) {
	c.res, c.diedAt = res, now
	c.inv.w.died(c)
	close(c.done)
}

// do runs f on the child's goroutine and waits for it, unless the child
// is dead already.
func (c *child) do(f func()) {
	ran := make(chan struct{})
	select {
	case c.cmds <- func() { f(); close(ran) }:
		<-ran
	case <-c.done:
	}
}

func (c *child) setDeadline(t time.Time) { c.do(func() { c.deadline = t }) }

// signal delivers a stop signal: a deaf COMMAND ignores it; another dies of
// it stopTake later, unless something ends it sooner.
func (c *child) signal(sig syscall.Signal) {
	c.do(func() {
		if c.deaf || c.stopping || c.killed {
			return
		}
		c.stopping = true
		if at := time.Now().Add(c.stopTake); at.Before(c.exitAt) {
			c.exitAt, c.exitRes = at, runner.Result{ExitCode: -1, Signal: sig}
		}
	})
}

// kill makes SIGKILL due now: a second SIGINT, or leaderrun dead (the
// lifeline's end).
func (c *child) kill() { c.armKill(0) }

// armKill makes SIGKILL due after grace, unless due sooner.
func (c *child) armKill(grace time.Duration) {
	c.do(func() {
		now := time.Now()
		if grace <= 0 {
			c.sigkill(now)
			return
		}
		if at := now.Add(grace); c.killAt.IsZero() || at.Before(c.killAt) {
			c.killAt = at
		}
	})
}

// leader.Process.

func (c *child) Pid() int              { return c.pid }
func (c *child) Done() <-chan struct{} { return c.done }
func (c *child) Result() runner.Result { <-c.done; return c.res }
func (c *child) SetKillDeadline(t time.Time) error {
	if c.inv.gate() {
		c.setDeadline(t)
	}
	return nil
}

// Stop is runner's policy: the stop signal once, SIGKILL after grace (now
// if grace <= 0), a later call only brings SIGKILL forward.
func (c *child) Stop(grace time.Duration) {
	if !c.inv.gate() {
		return
	}
	stop := c.g.cfg.StopSignal
	if stop == 0 {
		stop = syscall.SIGTERM
	}
	if grace > 0 {
		c.signal(stop)
	}
	c.armKill(grace)
}

// HandleSignal is runner's policy for a signal from outside: the
// terminating ones are forwarded, SIGKILL due KillGrace later; a second
// SIGINT kills at once.
func (c *child) HandleSignal(sig os.Signal) {
	if !c.inv.gate() {
		return
	}
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	switch s {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
		second := false
		c.do(func() {
			if s == syscall.SIGINT {
				c.interrupts++
				second = c.interrupts > 1
			}
		})
		if second {
			c.kill()
			return
		}
		c.signal(s)
		c.armKill(c.g.cfg.KillGrace)
	}
}

// parseEnv reads COMMAND's environment into a map.
func parseEnv(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "LEADERRUN_") {
			m[k] = v
		}
	}
	return m
}

// blob is the blob of the slot the child runs on.
func (c *child) blob() string {
	slot, _ := strconv.Atoi(c.env["LEADERRUN_SLOT"])
	return lease.SlotBlob(c.env["LEADERRUN_LEASE"], slot)
}

func (c *child) term() int64 {
	t, _ := strconv.ParseInt(c.env["LEADERRUN_TERM"], 10, 64)
	return t
}

func (c *child) String() string {
	return fmt.Sprintf("COMMAND pid %d of %s (%s term %d)", c.pid, c.inv.id, c.blob(), c.term())
}
