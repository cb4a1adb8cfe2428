//go:build unix

// The supervision of a started command: reading the wait status the guard
// reports, stopping what the command left running in its group, dismissing
// the guard, and closing Done.

package runner

import (
	"bufio"
	"os"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// supervise waits for the command, stops its leftovers, dismisses the guard
// and closes done.
func (p *Process) supervise() {
	res, reported := p.readStatus()
	// The guard leaves the group before it reports, so that the group holds
	// only what the command left behind. If it has not reported, it has died;
	// if it is still in the group, it could not leave: either way, reap it
	// now, or it would count as a leftover.
	if !reported || p.guardInGroup() {
		p.dismissGuard()
	}
	p.drain()
	p.status.Close()
	if !reported {
		res = guardResult(p.guard.ProcessState)
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
	// The group is empty and the guard, which has reported (or been reaped
	// above), is outside it: dismissing it needs no wait of leaderrun's, so
	// it comes after Done, which the end of the run and the release of the
	// lease wait for. Until then the lifeline still covers nothing but it.
	p.dismissGuard()
	p.lifeline.Close()
}

// readStatus reads the guard's report of the command's wait status. It
// returns false when the guard exited without one.
func (p *Process) readStatus() (Result, bool) {
	line, err := bufio.NewReader(p.status).ReadString('\n')
	if err != nil {
		return Result{}, false
	}
	return parseStatus(line)
}

func (p *Process) guardInGroup() bool {
	pg, err := unix.Getpgid(p.pgid)
	return err != nil || pg == p.pgid
}

// dismissGuard kills the guard (by pid: it is an unreaped child, so the pid
// cannot have been reused) and reaps it. The guard has nothing left to do
// once it has reported, or once it has died.
func (p *Process) dismissGuard() {
	if p.guardWaited {
		return
	}
	_ = p.guard.Process.Kill()
	_ = p.guard.Wait()
	p.guardWaited = true
}

// guardResult is the guard's own status, used when it died before reporting
// the command's (SIGKILL sent to the group, for one).
func guardResult(st *os.ProcessState) Result {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Result{ExitCode: -1, Signal: ws.Signal()}
	}
	return Result{ExitCode: st.ExitCode()}
}

// drain stops whatever the command left running in its group: the stop
// signal, then SIGKILL after KillGrace or sooner if a Stop asked for sooner,
// and waits until the group is empty (bounded once SIGKILL is sent). What a
// command leaves behind when it exits by itself is worth a warning; what is
// still on its way out of a stop under way is not.
func (p *Process) drain() {
	if !p.group.alive() {
		return
	}
	start := time.Now()
	p.mu.Lock()
	level := hclog.Warn
	if p.stopping {
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
		p.warnLocked(p.sendLocked(syscall.SIGKILL))
	}
	if !p.group.awaitEmpty(killedAt, kill) {
		p.log.Warn("processes remain in the command's group after SIGKILL; giving up waiting for them",
			"pgid", p.pgid, "waited", time.Since(killedAt()).Round(time.Millisecond))
		return
	}
	p.log.Log(level, "stopped processes the command left running in its group",
		"pgid", p.pgid, "sigkill", !killedAt().IsZero(), "took", time.Since(start).Round(time.Millisecond))
}
