//go:build unix

package runner

// Signalling the command's processes: Stop, the policy for signals from
// outside (HandleSignal), and the guard's kill deadline.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Stop asks the command's processes to stop: the stop signal now, then
// SIGCONT (so that a stopped group can act on it), SIGKILL after grace
// (grace <= 0: now), with SIGCONT to the guard. It does not wait: use Done.
// Only the first call sends the stop signal; a later one may bring SIGKILL
// forward, never back. After Done it does nothing.
func (p *Process) Stop(grace time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopLocked(grace)
}

// HandleSignal applies the policy for a signal leaderrun received from
// outside: SIGTERM, SIGINT, SIGHUP and SIGQUIT are forwarded to the
// command's processes (then SIGCONT), with SIGKILL due KillGrace after the first of them, and
// at once on a second SIGINT; any other (SIGUSR1, SIGWINCH...) is forwarded
// as it is. A command a forwarded signal ends reports it (128+N).
func (p *Process) HandleSignal(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return
	}
	switch s {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
		if s == syscall.SIGINT {
			p.interrupts++
			if p.interrupts > 1 {
				p.log.Warn("second interrupt: killing the command's process group", "pgid", p.pgid)
				p.killLocked()
				return
			}
		}
		p.log.Debug("forwarding stop request", "signal", s, "pgid", p.pgid, "grace", p.grace)
		p.sendLocked(s, syscall.SIGCONT)
		p.armKillLocked(p.grace)
	default:
		p.log.Debug("forwarding signal", "signal", s, "pgid", p.pgid)
		p.sendLocked(s)
	}
}

// sendLocked sends sigs, in order, to every process of the command unless
// they are gone (one look for the processes outside the group, however
// many signals); the first failure is logged. The usual one is EPERM: a process
// that changed its user (sudo, a setuid program) is out of reach of an
// unprivileged leaderrun. It is then waited for, SIGKILL sent again and
// again, until killWait after the first SIGKILL, then given up on (drain).
func (p *Process) sendLocked(sigs ...syscall.Signal) {
	if p.gone {
		return
	}
	if err := p.procs.signal(sigs...); err != nil && !p.signalErr {
		p.signalErr = true
		p.log.Warn("could not signal every process of the command; one that cannot be signalled is given up on after SIGKILL, and runs on",
			"pgid", p.pgid, "signal", sigs[0], "error", err, "give_up_after", killWait)
	}
}

// killRoundLocked sends SIGKILL to every process of the command, and
// SIGCONT to the guard: stopped by SIGSTOP (which it cannot catch: sent to
// it, or to the command's group while it was there), it could neither
// report the command's end nor reap what it adopted.
func (p *Process) killRoundLocked() {
	p.sendLocked(syscall.SIGKILL)
	if !p.gone {
		_ = p.guard.Process.Signal(syscall.SIGCONT) // its pidfd: never another process
	}
}

func (p *Process) stopLocked(grace time.Duration) {
	if p.gone {
		return
	}
	if grace <= 0 {
		p.killLocked()
		return
	}
	if !p.stopSent {
		p.stopSent = true
		p.log.Debug("stopping the command", "pgid", p.pgid, "signal", p.stopSig, "grace", grace)
		p.sendLocked(p.stopSig, syscall.SIGCONT)
	}
	p.armKillLocked(grace)
}

// armKillLocked makes SIGKILL due after grace, unless it is due sooner.
func (p *Process) armKillLocked(grace time.Duration) {
	if p.gone || !p.killedAt.IsZero() {
		return
	}
	if grace <= 0 {
		p.killLocked()
		return
	}
	at := time.Now().Add(grace)
	if !p.killAt.IsZero() && !at.Before(p.killAt) {
		return
	}
	p.killAt = at
	if p.killTimer == nil {
		p.killTimer = time.AfterFunc(grace, p.graceOver)
	} else {
		p.killTimer.Reset(grace)
	}
}

func (p *Process) graceOver() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone || !p.killedAt.IsZero() || time.Now().Before(p.killAt) {
		return
	}
	p.log.Warn("grace period over: killing the command's processes", "pgid", p.pgid)
	p.killLocked()
}

func (p *Process) killLocked() {
	if p.gone {
		return
	}
	if p.killedAt.IsZero() {
		p.killedAt = time.Now()
		p.killAt = p.killedAt
		if p.killTimer != nil {
			p.killTimer.Stop()
		}
		close(p.killed)
		p.log.Debug("sending SIGKILL to the command's processes", "pgid", p.pgid)
	}
	p.killRoundLocked()
}

// SetKillDeadline hands the guard a deadline by which the command's
// processes must be dead: unless leaderrun moves it forward, the guard
// sends SIGKILL then on its own. This covers a leaderrun alive but unable
// to act (SIGSTOP, starved), as the lifeline covers a dead one; not a host
// frozen as a whole. It travels as a reading of the system's monotonic
// clock, which the guard shares. Later calls replace it; after the
// processes have gone it does nothing.
//
// It never blocks: a guard that does not read (stopped with its group,
// say) cannot hold up the caller, nor Stop and HandleSignal. When the
// lifeline is full the new deadline is dropped and the guard keeps an
// older one, which can only kill sooner: the safe side.
func (p *Process) SetKillDeadline(t time.Time) error {
	at, err := monotonicAt(t)
	if err != nil {
		return fmt.Errorf("runner: kill deadline: %w", err)
	}
	p.mu.Lock()
	gone := p.gone
	p.mu.Unlock()
	if gone {
		return nil
	}
	// Outside the mutex: the write cannot block, and 8 bytes, less than
	// PIPE_BUF, go whole or not at all, whoever else writes.
	full, err := writeNonblocking(p.lifeline, binary.BigEndian.AppendUint64(nil, uint64(at)))
	switch {
	case full:
		p.log.Debug("the guard's lifeline is full; it keeps an earlier kill deadline", "pgid", p.pgid)
	case err != nil && !errors.Is(err, os.ErrClosed) && !errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("runner: kill deadline: %w", err)
	}
	return nil
}

// writeNonblocking makes one attempt to write buf to f, a pipe in
// non-blocking mode (see Prepare); full reports a pipe with no room for it.
func writeNonblocking(f *os.File, buf []byte) (full bool, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		_, werr = unix.Write(int(fd), buf)
		return true // one attempt: never wait for room
	})
	if err != nil {
		return false, err
	}
	if errors.Is(werr, unix.EAGAIN) {
		return true, nil
	}
	return false, werr
}
