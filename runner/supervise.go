//go:build unix

package runner

// The supervision of a started command: the wait status the guard reports,
// stopping what the command left running, dismissing the guard, Done.

import (
	"bufio"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

func (p *Process) supervise() {
	res, reported := p.awaitReport()
	// On Linux the guard stays until the command's processes are gone, as
	// their subreaper, and one that died before reporting stays unreaped
	// until then: its pid, the root of the command's processes, cannot be
	// reused meanwhile, and it is not counted among them. Elsewhere the
	// guard leaves the group once the command has started, so that the
	// group holds only the command's processes: one that did not report has
	// died, one still in the group could not leave: reap it now, or it
	// counts as one.
	if !treeWalks {
		if pg, err := unix.Getpgid(p.pgid); !reported || err != nil || pg == p.pgid {
			p.dismissGuard()
		}
	}
	p.drain()
	p.status.Close()
	if !reported {
		// The guard died before reporting (SIGKILL sent to it, say): its
		// own status is the result.
		p.dismissGuard()
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
		p.restoreTTOU()
	}
	p.result = res
	close(p.done)
	// The command's processes are gone (or reaped above): the guard's
	// dismissal needs no waiting, so it comes after Done, which the end of
	// the run and the lease's release wait for. Until then the lifeline
	// covers nothing but it.
	p.dismissGuard()
	p.lifeline.Close()
}

// awaitReport reads the command's wait status, as the guard reports it;
// reported is false when the guard died first. Once SIGKILL has been sent
// it sends it again every pollInterval, with SIGCONT to the guard, and a
// guard that still has not reported killWait after the first SIGKILL (stuck
// itself, or waiting for a command stuck in the kernel) is killed: the
// command's processes are then those of a guard killed alone.
func (p *Process) awaitReport() (res Result, reported bool) {
	lines := make(chan string, 1)
	go func() {
		line, err := bufio.NewReader(p.status).ReadString('\n')
		if err != nil {
			line = ""
		}
		lines <- line
	}()
	killed := p.killed
	var tick <-chan time.Time
	guardKilled := false
	// A guard stopped by a SIGSTOP sent to it (it cannot catch that one;
	// `pkill -STOP` matches its command line too) would report nothing,
	// and leaderrun would hold the lease for ever: it gets SIGCONT every
	// guardNudge, which it catches and drops.
	nudge := time.NewTicker(guardNudge)
	defer nudge.Stop()
	for {
		select {
		case line := <-lines:
			return parseStatus(line)
		case <-nudge.C:
			_ = p.guard.Process.Signal(syscall.SIGCONT) // its pidfd: never another process
		case <-killed:
			killed = nil
			ticker := time.NewTicker(pollInterval)
			defer ticker.Stop()
			tick = ticker.C
		case <-tick:
			p.mu.Lock()
			p.killRoundLocked()
			waited := time.Since(p.killedAt)
			p.mu.Unlock()
			if waited > killWait && !guardKilled {
				guardKilled = true
				p.log.Warn("the guard has not reported the command's end after SIGKILL; killing it",
					"pgid", p.pgid, "waited", waited.Round(time.Millisecond))
				_ = p.guard.Process.Kill() // left unreaped: see supervise
			}
		}
	}
}

// dismissGuard kills the guard (by pid: an unreaped child's pid cannot have
// been reused) and reaps it, once. Only the supervising goroutine calls it,
// or Discard before there is one.
func (p *Process) dismissGuard() {
	select {
	case <-p.guardReaped:
		return
	default:
	}
	_ = p.guard.Process.Kill()
	_ = p.guard.Wait()
	close(p.guardReaped)
}

// drain stops what the command left running (stop signal, SIGKILL after
// KillGrace or as a Stop asked) and waits until none of it runs, bounded
// once SIGKILL is sent. Leftovers of a command that exited by itself are
// worth a warning; what is on its way out of a stop under way is not.
func (p *Process) drain() {
	if !p.procs.alive() {
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
		p.log.Info("command exited; stopping what it left running", "pgid", p.pgid, "grace", p.grace)
	}

	killedAt := func() time.Time {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.killedAt
	}
	kill := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.killRoundLocked()
	}
	if !awaitEmpty(p.procs, killedAt, kill) {
		p.log.Warn("processes of the command still run after SIGKILL; giving up on them: they run on, unleased",
			"pgid", p.pgid, "pids", p.procs.left(), "waited", time.Since(killedAt()).Round(time.Millisecond))
		return
	}
	p.log.Log(level, "stopped processes the command left running",
		"pgid", p.pgid, "sigkill", !killedAt().IsZero(), "took", time.Since(start).Round(time.Millisecond))
}
