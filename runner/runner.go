//go:build unix

package runner

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

const (
	// pollInterval is how often the group is checked while leftovers are
	// being stopped.
	pollInterval = 25 * time.Millisecond
	// killWait bounds the wait for the group to empty once SIGKILL has been
	// sent: a process stuck in the kernel (uninterruptible sleep) cannot be
	// waited for forever.
	killWait = 5 * time.Second
)

// Config describes the command to run.
type Config struct {
	// Argv is the command and its arguments. Argv[0] is looked up on PATH
	// (exec.LookPath) unless it contains a '/'. No shell is involved.
	Argv []string
	// Env is the command's full environment; nil means os.Environ(). Start
	// uses it; Prepare ignores it (the environment is given to Launch).
	Env []string
	// Stdin, Stdout and Stderr are handed to the command as they are (no
	// copying); nil means os.Stdin, os.Stdout and os.Stderr.
	Stdin, Stdout, Stderr *os.File
	// KillSignal asks the command to stop; 0 means SIGTERM.
	KillSignal syscall.Signal
	// KillGrace is how long the group has, after the stop signal sent for an
	// outside stop request (HandleSignal) or for processes left behind by
	// the command, before SIGKILL; 0 means SIGKILL at once.
	KillGrace time.Duration
	// Logger receives the runner's log, under the name "runner"; nil
	// discards it.
	Logger hclog.Logger
}

// Result is how the command ended.
type Result struct {
	// ExitCode is the command's exit code; -1 when a signal ended it.
	ExitCode int
	// Signal is the signal that ended the command, 0 when it exited.
	Signal syscall.Signal
}

// Code returns the status a shell would report: ExitCode, or 128+Signal
// when a signal ended the command.
func (r Result) Code() int {
	if r.Signal != 0 {
		return 128 + int(r.Signal)
	}
	return r.ExitCode
}

// ErrNoCommand is returned by Start and Prepare when Config.Argv is empty.
var ErrNoCommand = errors.New("runner: no command")

// ExecError reports a command that cannot be run: Code is 127 when it was
// not found, 126 when it was found but is not executable (no permission, a
// directory, found relative to the current directory through PATH).
type ExecError struct {
	Path string // the command as given (Argv[0])
	Code int    // 126 or 127, the status a shell would report
	Err  error  // why: exec.ErrNotFound, fs.ErrNotExist, fs.ErrPermission, syscall.EISDIR, exec.ErrDot...
}

func (e *ExecError) Error() string {
	return "runner: " + e.Path + ": " + e.Err.Error()
}

func (e *ExecError) Unwrap() error { return e.Err }

// Process is a running command and its process group. Its methods are safe
// for concurrent use.
type Process struct {
	log      hclog.Logger
	guard    *exec.Cmd
	pgid     int
	stopSig  syscall.Signal
	grace    time.Duration
	tty      int      // the terminal handed to the group, -1 when none
	lifeline *os.File // write end; the guard kills the group when it is closed
	status   *os.File // read end; the guard writes the command's wait status to it

	done   chan struct{}
	result Result

	// Used only by the supervising goroutine.
	guardWaited bool
	group       groupWatch

	mu         sync.Mutex
	gone       bool      // the group is empty: send nothing more
	stopping   bool      // a stop is under way (Stop, Kill, an outside stop request)
	stopSent   bool      // Stop's stop signal has been sent
	interrupts int       // outside SIGINTs handled
	killAt     time.Time // when SIGKILL is due; zero when none is armed
	killTimer  *time.Timer
	killedAt   time.Time // when SIGKILL was first sent
}

// Start starts cfg.Argv in a new process group and returns without waiting
// for it. It resolves the command first, so a command that cannot be run is
// reported as *ExecError before anything is started. It is Prepare followed
// by Launch(cfg.Env).
//
// The group is led by a guard process (leaderrun re-executed, see RunGuard)
// whose child is the command. Promises and limits:
//   - Every signal the Process sends goes to the whole group, so pipelines
//     and grandchildren stop with the command; processes that leave the
//     group (setsid, setpgid: daemons) are out of reach.
//   - If leaderrun dies, even by SIGKILL, the guard notices at once and
//     sends SIGKILL to the group, on every Unix system. On Linux the command
//     also has a parent-death signal (SIGKILL) bound to the guard, so it
//     cannot outlive a guard killed on its own; elsewhere a command whose
//     guard alone was killed is stopped by leaderrun as a leftover.
//   - When the command exits, what it left in its group is stopped (stop
//     signal, grace, SIGKILL) before Done is closed, and the guard still
//     covers it against leaderrun's death meanwhile.
//   - If Stdin is the controlling terminal and leaderrun's group is in the
//     foreground, the group is put in the foreground (the command gets
//     Ctrl-C and can read the terminal) and the terminal is given back to
//     leaderrun's group before Done is closed. Job control is not relayed:
//     a command stopped by Ctrl-Z stays stopped, holding the lease, until
//     it gets SIGCONT or is stopped.
//
// The guard is leaderrun's own binary: /proc/self/exe on Linux (still right
// after the file was replaced by an upgrade), os.Executable elsewhere.
func Start(cfg Config) (*Process, error) {
	prep, err := Prepare(cfg)
	if err != nil {
		return nil, err
	}
	return prep.Launch(cfg.Env)
}

// execCode maps a LookPath error to the status a shell would report.
func execCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return 127
	}
	return 126
}

func orFile(f, def *os.File) *os.File {
	if f == nil {
		return def
	}
	return f
}

// guardArgs is the guard's argv: leaderrun's own name, the hidden switch,
// the protocol, the resolved path, then the command's argv as given (its
// argv[0] kept).
func guardArgs(path string, argv []string) []string {
	self := "leaderrun"
	if len(os.Args) > 0 && os.Args[0] != "" {
		self = os.Args[0]
	}
	args := make([]string, 0, 5+len(argv))
	args = append(args, self, guardArg, guardProtocol, path, "--")
	return append(args, argv...)
}

// Pid returns the id of the command's process group, which is also the pid
// of its leader, the guard.
func (p *Process) Pid() int { return p.pgid }

// Done is closed when the command has exited and nothing is left running in
// its group, or, SIGKILL having been sent, when the group has still not
// emptied after a few seconds (processes stuck in the kernel: they die as
// soon as they leave it).
func (p *Process) Done() <-chan struct{} { return p.done }

// Result returns how the command ended. It waits for Done.
func (p *Process) Result() Result {
	<-p.done
	return p.result
}

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
	err := unix.Kill(-p.pgid, sig)
	if err == nil || errors.Is(err, unix.ESRCH) {
		return nil
	}
	return fmt.Errorf("runner: send %v to process group %d: %w", sig, p.pgid, err)
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

// monotonicNow reads the system-wide monotonic clock, in nanoseconds.
func monotonicNow() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

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

// formatStatus and parseStatus carry a wait status from the guard to
// leaderrun: "exit N" or "signal N".
func formatStatus(code int, sig syscall.Signal) string {
	if sig != 0 {
		return "signal " + strconv.Itoa(int(sig)) + "\n"
	}
	return "exit " + strconv.Itoa(code) + "\n"
}

func parseStatus(line string) (Result, bool) {
	kind, num, ok := strings.Cut(strings.TrimSpace(line), " ")
	if !ok {
		return Result{}, false
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return Result{}, false
	}
	switch kind {
	case "exit":
		return Result{ExitCode: n}, true
	case "signal":
		return Result{ExitCode: -1, Signal: syscall.Signal(n)}, true
	}
	return Result{}, false
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

	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for range tick.C {
		if !p.group.alive() {
			break
		}
		p.mu.Lock()
		killedAt := p.killedAt
		if !killedAt.IsZero() {
			// Again: a process that was forking at the first SIGKILL may
			// have left a child that did not get it.
			p.warnLocked(p.sendLocked(syscall.SIGKILL))
		}
		p.mu.Unlock()
		if !killedAt.IsZero() && time.Since(killedAt) > killWait {
			p.log.Warn("processes remain in the command's group after SIGKILL; giving up waiting for them",
				"pgid", p.pgid, "waited", time.Since(killedAt).Round(time.Millisecond))
			return
		}
	}
	p.mu.Lock()
	killed := !p.killedAt.IsZero()
	p.mu.Unlock()
	p.log.Log(level, "stopped processes the command left running in its group",
		"pgid", p.pgid, "sigkill", killed, "took", time.Since(start).Round(time.Millisecond))
}
