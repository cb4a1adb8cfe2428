//go:build unix

package runner

// Preparing a command ahead of time: Prepare starts the guard while
// leaderrun waits for the lease, Launch gives it the go-ahead (and the
// controlling terminal's foreground), Discard ends it unused.

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// Launch's failures that leave nothing behind (see Launch).
var (
	errGuardGone = errors.New("runner: the prepared guard has gone")
	errSpent     = errors.New("runner: prepared command already launched or discarded")
)

// Prepared is a command whose guard waits for Launch or Discard. Its methods
// are safe for concurrent use.
type Prepared struct {
	name   string // the command as given (Argv[0]), for messages
	path   string // the command as resolved
	stdin  *os.File
	launch *os.File // write end; the guard reads the go-ahead from it
	proc   *Process // what Launch returns, its guard already running

	mu       sync.Mutex
	state    prepState
	deadline time.Time // the kill deadline for the command; zero when none
}

type prepState int

const (
	prepared prepState = iota
	launched
	discarded
)

// Prepare does all of Start that can precede the lease: it resolves the
// command (an *ExecError or ErrNoCommand) and starts the guard, which leads
// the command's new process group and waits, blocked in a read, for Launch's
// go-ahead. So the guard's start (a whole Go program's) is off the critical
// path between holding the lease and running the command.
//
// cfg.Env is ignored: Launch gives the command's environment. The guard runs
// with leaderrun's, which the command never sees. Until Launch, leaderrun's
// group keeps the terminal's foreground (Ctrl-C reaches leaderrun). If
// leaderrun dies before Launch, the guard exits having started nothing. A
// Prepared must be launched or discarded: until then the guard is
// leaderrun's child.
func Prepare(cfg Config) (*Prepared, error) {
	if len(cfg.Argv) == 0 {
		return nil, ErrNoCommand
	}
	path, err := lookup(cfg.Argv[0])
	if err != nil {
		return nil, err
	}
	self, err := selfExe()
	if err != nil {
		return nil, err
	}
	name := "leaderrun" // the guard's argv[0], as leaderrun's (see RunGuard)
	if len(os.Args) > 0 && os.Args[0] != "" {
		name = os.Args[0]
	}
	log := cmp.Or(cfg.Logger, hclog.NewNullLogger()).Named("runner")
	stdin := cmp.Or(cfg.Stdin, os.Stdin)

	// The guard's ends, then leaderrun's.
	var theirs, ours [3]*os.File
	for i, name := range []string{"lifeline", "status", "launch"} {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(theirs[:i])
			closeFiles(ours[:i])
			return nil, fmt.Errorf("runner: %s pipe: %w", name, err)
		}
		if name == "status" {
			r, w = w, r // the guard writes this one
		}
		theirs[i], ours[i] = r, w
	}
	// SetKillDeadline writes the lifeline without ever waiting for room.
	if err := setNonblock(ours[0]); err != nil {
		closeFiles(theirs[:])
		closeFiles(ours[:])
		return nil, fmt.Errorf("runner: lifeline pipe: %w", err)
	}
	guard := &exec.Cmd{
		Path:        self,
		Args:        append([]string{name, guardArg, guardProtocol, path, "--"}, cfg.Argv...),
		Stdin:       stdin,
		Stdout:      cmp.Or(cfg.Stdout, os.Stdout),
		Stderr:      cmp.Or(cfg.Stderr, os.Stderr),
		ExtraFiles:  theirs[:], // fds 3, 4 and 5 in the guard
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	// leaderrun reaps the orphans it adopts, never the guard: its waiter is
	// dismissGuard.
	guardReaped := make(chan struct{})
	err = ownReaper().start(func() (int, <-chan struct{}, error) {
		if err := guard.Start(); err != nil {
			return 0, nil, err
		}
		return guard.Process.Pid, guardReaped, nil
	})
	closeFiles(theirs[:])
	if err != nil {
		closeFiles(ours[:])
		return nil, fmt.Errorf("runner: start %s: %w", cfg.Argv[0], err)
	}
	pgid := guard.Process.Pid
	log.Debug("prepared command", "path", path, "pgid", pgid)
	return &Prepared{
		name:   cfg.Argv[0],
		path:   path,
		stdin:  stdin,
		launch: ours[2],
		proc: &Process{
			log:         log,
			guard:       guard,
			guardReaped: guardReaped,
			pgid:        pgid,
			procs:       tree{root: pgid},
			stopSig:     cmp.Or(cfg.StopSignal, syscall.SIGTERM),
			grace:       cfg.KillGrace,
			restoreTTOU: func() {},
			lifeline:    ours[0],
			status:      ours[1],
			killed:      make(chan struct{}),
			done:        make(chan struct{}),
		},
	}, nil
}

// selfExe names leaderrun's own binary, which the guard and its anchor
// are: /proc/self/exe on Linux, which names it even if its file was
// replaced or removed since, os.Executable elsewhere.
func selfExe() (string, error) {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("runner: find leaderrun's own executable: %w", err)
	}
	return self, nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// setNonblock puts f in non-blocking mode, without f.Fd (which would put it
// back in blocking mode).
func setNonblock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetNonblock(int(fd), true) }); err != nil {
		return err
	}
	return serr
}

// Launch has the guard start the command with env as its whole environment
// (nil means os.Environ()), without waiting for that, and returns it as
// Start does. The kill deadline set before (SetKillDeadline) is in force
// before the command starts; if it has passed, the command is not started
// and the Process ends at once reporting SIGKILL, as if killed at it.
//
// Launch fails, leaving nothing behind, when the guard is known to be gone
// (it died before the go-ahead: nothing was started, preparing again is
// safe), for an environment entry that contains NUL, and when already
// launched or discarded. A guard that dies during Launch is reported by the
// Process's Result, as after Start.
func (p *Prepared) Launch(env []string) (*Process, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != prepared {
		return nil, errSpent
	}
	if env == nil {
		env = os.Environ()
	}
	var deadline int64
	if !p.deadline.IsZero() {
		var err error
		if deadline, err = monotonicAt(p.deadline); err != nil {
			p.discardLocked()
			return nil, fmt.Errorf("runner: kill deadline: %w", err)
		}
	}
	msg, err := encodeLaunch(deadline, env)
	if err != nil {
		p.discardLocked()
		return nil, fmt.Errorf("runner: start %s: %w", p.name, err)
	}
	proc := p.proc
	// The terminal is handed over now, not when the guard started: until the
	// go-ahead, leaderrun's group keeps it.
	tty := foregroundTerminal(p.stdin)
	if tty >= 0 {
		proc.restoreTTOU = ignoreTTOU()
		if err := unix.IoctlSetPointerInt(tty, unix.TIOCSPGRP, proc.pgid); err != nil {
			proc.restoreTTOU()
			p.discardLocked()
			return nil, fmt.Errorf("runner: start %s: give it the terminal: %w", p.name, err)
		}
	}
	_, err = p.launch.Write(msg)
	if cerr := p.launch.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if tty >= 0 {
			_ = reclaimTerminal(tty)
			proc.restoreTTOU()
		}
		p.discardLocked()
		if errors.Is(err, syscall.EPIPE) {
			return nil, fmt.Errorf("runner: start %s: %w (%v)", p.name, errGuardGone, proc.guard.ProcessState)
		}
		return nil, fmt.Errorf("runner: start %s: go-ahead: %w", p.name, err)
	}
	p.state = launched
	proc.tty = tty
	proc.log.Debug("started command", "path", p.path, "pgid", proc.pgid, "foreground", tty >= 0)
	go proc.supervise()
	return proc, nil
}

// Discard kills and reaps the guard without starting the command. It does
// nothing after Launch or Discard, so it can be deferred.
func (p *Prepared) Discard() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != prepared {
		return
	}
	p.discardLocked()
	p.proc.log.Debug("discarded prepared command", "pgid", p.proc.pgid)
}

func (p *Prepared) discardLocked() {
	p.state = discarded
	p.proc.dismissGuard()
	p.proc.lifeline.Close()
	p.proc.status.Close()
	p.launch.Close()
}

// SetKillDeadline sets the deadline by which the command's group must be
// dead. Before Launch, the latest one goes with the go-ahead (see Launch)
// and holds until moved through the Process; after Launch it is
// Process.SetKillDeadline; after Discard it does nothing.
func (p *Prepared) SetKillDeadline(t time.Time) error {
	p.mu.Lock()
	switch p.state {
	case launched:
		p.mu.Unlock()
		return p.proc.SetKillDeadline(t)
	case prepared:
		p.deadline = t
		if t.IsZero() {
			// Keep "zero" meaning "none": a zero time is long past.
			p.deadline = time.Unix(0, 0)
		}
	}
	p.mu.Unlock()
	return nil
}

// foregroundTerminal returns f's descriptor when f is leaderrun's
// controlling terminal and leaderrun's process group is in its foreground,
// else -1.
func foregroundTerminal(f *os.File) int {
	fd := int(f.Fd())
	// TIOCGPGRP fails (ENOTTY) on anything but the controlling terminal.
	if pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil || pg != unix.Getpgrp() {
		return -1
	}
	return fd
}

// ignoreTTOU ignores SIGTTOU from the terminal's hand-over to the command's
// group until the returned function is called, once it is reclaimed:
// leaderrun is a background process meanwhile, and under `stty tostop` its
// own log lines on the terminal would otherwise stop it. A disposition to
// ignore it that leaderrun inherited is left as it is. The health check's
// shell, started meanwhile, inherits it ignored (it has no terminal).
func ignoreTTOU() (restore func()) {
	if signal.Ignored(syscall.SIGTTOU) {
		return func() {}
	}
	signal.Ignore(syscall.SIGTTOU)
	return sync.OnceFunc(func() { signal.Reset(syscall.SIGTTOU) })
}

// reclaimTerminal puts leaderrun's process group back in the terminal's
// foreground. From a background group that raises SIGTTOU, so it is ignored
// for the call, then given back its previous handling.
func reclaimTerminal(fd int) error {
	if !signal.Ignored(syscall.SIGTTOU) {
		signal.Ignore(syscall.SIGTTOU)
		defer signal.Reset(syscall.SIGTTOU)
	}
	return unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, unix.Getpgrp())
}
