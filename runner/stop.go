//go:build unix

// Signalling the command's process group: Signal, Stop (the stop signal,
// then SIGKILL after a grace), Kill (SIGKILL now), the policy for signals
// leaderrun receives from outside (HandleSignal), and the kill deadline
// handed to the guard (SetKillDeadline).

package runner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Signal sends sig to the whole group. It returns nil when the group is
// already gone.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sendLocked(sig)
}

// Stop asks the group to stop: the stop signal now (followed by SIGCONT, so
// that a stopped group can act on it), SIGKILL after grace; grace <= 0 means
// SIGKILL now. It does not wait: use Done. The stop signal is sent by the
// first call only; a later call may bring SIGKILL forward, never push it
// back. After Done it does nothing.
func (p *Process) Stop(grace time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopLocked(grace)
}

// Kill sends SIGKILL to the whole group now.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killLocked()
}

// HandleSignal applies the policy for a signal that leaderrun received from
// outside:
//   - SIGTERM, SIGINT, SIGHUP, SIGQUIT are forwarded to the group (followed
//     by SIGCONT), and SIGKILL is due KillGrace after the first of them;
//     a second SIGINT sends SIGKILL at once;
//   - any other signal (SIGUSR1, SIGUSR2, SIGWINCH...) is forwarded as it is.
//
// A command that a forwarded signal ends reports it in its Result (128+N).
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
		p.stopping = true
		p.warnLocked(p.sendLocked(s))
		p.warnLocked(p.sendLocked(syscall.SIGCONT))
		p.armKillLocked(p.grace)
	default:
		p.log.Debug("forwarding signal", "signal", s, "pgid", p.pgid)
		p.warnLocked(p.sendLocked(s))
	}
}

func (p *Process) sendLocked(sig syscall.Signal) error {
	if p.gone {
		return nil
	}
	return signalGroup(p.pgid, sig)
}

func (p *Process) warnLocked(err error) {
	if err != nil {
		p.log.Warn("could not signal the command's process group", "pgid", p.pgid, "error", err)
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
	p.stopping = true
	if !p.stopSent {
		p.stopSent = true
		p.log.Debug("stopping the command", "pgid", p.pgid, "signal", p.stopSig, "grace", grace)
		p.warnLocked(p.sendLocked(p.stopSig))
		p.warnLocked(p.sendLocked(syscall.SIGCONT))
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
	p.log.Warn("grace period over: killing the command's process group", "pgid", p.pgid)
	p.killLocked()
}

func (p *Process) killLocked() {
	if p.gone {
		return
	}
	p.stopping = true
	if p.killedAt.IsZero() {
		p.killedAt = time.Now()
		p.killAt = p.killedAt
		if p.killTimer != nil {
			p.killTimer.Stop()
		}
		p.log.Debug("sending SIGKILL to the command's process group", "pgid", p.pgid)
	}
	p.warnLocked(p.sendLocked(syscall.SIGKILL))
}

// SetKillDeadline hands the guard a deadline by which the group must be
// dead: if leaderrun has not moved it forward by then, the guard sends
// SIGKILL to the group on its own. This covers a leaderrun that cannot act
// although it is alive (stopped with SIGSTOP, starved), as the lifeline
// covers a dead one; it cannot cover a host that is frozen as a whole. The
// deadline is passed on the system's monotonic clock, which the guard
// shares. Later calls replace it; after the group has gone it does nothing.
func (p *Process) SetKillDeadline(t time.Time) error {
	at, err := monotonicAt(t)
	if err != nil {
		return fmt.Errorf("runner: kill deadline: %w", err)
	}
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(at))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return nil
	}
	if _, err := p.lifeline.Write(buf[:]); err != nil && !errors.Is(err, os.ErrClosed) && !errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("runner: kill deadline: %w", err)
	}
	return nil
}
