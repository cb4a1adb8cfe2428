//go:build unix

package runner

// The supervision of a started command: the wait status the guard reports,
// stopping what the command left in its group, dismissing the guard, Done.

import (
	"bufio"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

func (p *Process) supervise() {
	// The command's wait status, as the guard reports it.
	var res Result
	reported := false
	if line, err := bufio.NewReader(p.status).ReadString('\n'); err == nil {
		res, reported = parseStatus(line)
	}
	// The guard leaves the group before it reports, so that the group holds
	// only the command's leftovers. One that did not report has died, one
	// still in the group could not leave: reap it now, or it counts as one.
	if pg, err := unix.Getpgid(p.pgid); !reported || err != nil || pg == p.pgid {
		p.dismissGuard()
	}
	p.drain()
	p.status.Close()
	if !reported {
		// The guard died before reporting (SIGKILL sent to the group, say):
		// its own status is the result.
		st := p.guard.ProcessState
		res = Result{ExitCode: st.ExitCode()}
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res = Result{ExitCode: -1, Signal: ws.Signal()}
		}
	}

	p.mu.Lock()
	p.gone = true
	if p.killTimer != nil {
		p.killTimer.Stop()
	}
	p.mu.Unlock()

	if p.tty >= 0 {
		if err := reclaimTerminal(p.tty); err != nil {
			p.log.Warn("could not take the terminal back from the command's group", "error", err)
		}
	}
	p.result = res
	close(p.done)
	// The group is empty and the guard outside it (or reaped above): its
	// dismissal needs no waiting, so it comes after Done, which the end of
	// the run and the lease's release wait for. Until then the lifeline
	// covers nothing but it.
	p.dismissGuard()
	p.lifeline.Close()
}

// dismissGuard kills the guard (by pid: an unreaped child's pid cannot have
// been reused) and reaps it, once. Only the supervising goroutine calls it,
// or Discard before there is one.
func (p *Process) dismissGuard() {
	if p.guard.ProcessState != nil {
		return
	}
	_ = p.guard.Process.Kill()
	_ = p.guard.Wait()
}

// drain stops what the command left in its group (stop signal, SIGKILL after
// KillGrace or as a Stop asked) and waits until the group is empty, bounded
// once SIGKILL is sent. Leftovers of a command that exited by itself are
// worth a warning; what is on its way out of a stop under way is not.
func (p *Process) drain() {
	group := groupWatch{pgid: p.pgid}
	if !group.alive() {
		return
	}
	start := time.Now()
	p.mu.Lock()
	level := hclog.Warn
	if !p.killAt.IsZero() { // a stop is under way
		level = hclog.Debug
	}
	p.stopLocked(p.grace)
	p.mu.Unlock()
	if level == hclog.Warn {
		p.log.Info("command exited; stopping what it left running in its group", "pgid", p.pgid, "grace", p.grace)
	}

	killedAt := func() time.Time {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.killedAt
	}
	kill := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.sendLocked(syscall.SIGKILL)
	}
	if !group.awaitEmpty(killedAt, kill) {
		p.log.Warn("processes remain in the command's group after SIGKILL; giving up waiting for them",
			"pgid", p.pgid, "waited", time.Since(killedAt()).Round(time.Millisecond))
		return
	}
	p.log.Log(level, "stopped processes the command left running in its group",
		"pgid", p.pgid, "sigkill", !killedAt().IsZero(), "took", time.Since(start).Round(time.Millisecond))
}
