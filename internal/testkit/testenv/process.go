package testenv

// Processes a driver starts: logged to a file, in their own process group,
// unable to outlive the driver, and stopped by their pid.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/leaderrun/leaderrun/runner/pdeath"
)

// Process is a process a driver started with StartLogged.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	Log  string          // where its standard output and error go
	done <-chan struct{} // closed when it has exited and been reaped
}

// StartLogged starts cmd with its standard output and error appended to
// logPath, in its own process group (so that a Ctrl-C meant for the driver
// does not reach it: the driver stops it itself, and a group signal reaches
// what it started without leaving the group) and, on Linux, with a
// parent-death signal (see internal/pdeath), so that nothing a driver
// starts outlives it. name is for messages.
func StartLogged(name string, cmd *exec.Cmd, logPath string) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	done, err := pdeath.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &Process{Name: name, Cmd: cmd, Log: logPath, done: done}, nil
}

// Pid is the process's pid, which is also its group's id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Done is closed when the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited and been reaped; false for
// a nil Process (one never started).
func (p *Process) Exited() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits up to d for the process to exit.
func (p *Process) Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// Signal sends sig to the process alone (os.Process uses a pidfd where it
// can, so a reused pid is never hit). A process that has exited, or a nil
// one, is not an error.
func (p *Process) Signal(sig syscall.Signal) error {
	if p == nil || p.Exited() {
		return nil
	}
	if err := p.Cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s %v: %w", p.Name, sig, err)
	}
	return nil
}

// SignalGroup sends sig to the process group StartLogged created for it.
func (p *Process) SignalGroup(sig syscall.Signal) {
	if p != nil && !p.Exited() {
		_ = unix.Kill(-p.Pid(), sig)
	}
}

// Kill sends SIGKILL to its group and to it, and waits until it has been
// reaped.
func (p *Process) Kill() {
	if p == nil || p.Exited() {
		return
	}
	p.SignalGroup(syscall.SIGKILL)
	_ = p.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM, then Kill if it has not exited after grace.
func (p *Process) Stop(grace time.Duration) {
	if p == nil || p.Exited() {
		return
	}
	_ = p.Signal(syscall.SIGTERM)
	if !p.Wait(grace) {
		p.Kill()
	}
}

// ExitCode is the exit status, 128+N when signal N ended it, -1 while it
// runs.
func (p *Process) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	if ws, ok := p.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return p.Cmd.ProcessState.ExitCode()
}
