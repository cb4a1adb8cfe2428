//go:build unix

package runner

// The package's public face: Config, Result, the errors, Lookup, Start and
// Process (signalling in stop.go, supervision in supervise.go).

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
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
	// StopSignal asks the command to stop; 0 means SIGTERM.
	StopSignal syscall.Signal
	// KillGrace is how long the group has after the stop signal, for an
	// outside stop request (HandleSignal) or for what the command left
	// behind, before SIGKILL; 0 means SIGKILL at once.
	KillGrace time.Duration
	// Logger receives the log, named "runner"; nil discards it.
	Logger hclog.Logger
}

// Result is how the command ended.
type Result struct {
	ExitCode int            // the command's exit code; -1 when a signal ended it
	Signal   syscall.Signal // the signal that ended it; 0 when it exited
}

// Code returns the status a shell would report: ExitCode, or 128+Signal.
func (r Result) Code() int {
	if r.Signal != 0 {
		return 128 + int(r.Signal)
	}
	return r.ExitCode
}

// ErrNoCommand is returned by Start and Prepare when Config.Argv is empty.
var ErrNoCommand = errors.New("runner: no command")

// ExecError reports a command that cannot be run: Code is 127 when it was
// not found, 126 when it is not executable (no permission, a directory,
// found relative to the current directory through PATH).
type ExecError struct {
	Path string // the command as given (Argv[0])
	Code int    // 126 or 127, the status a shell would report
	Err  error  // why: exec.ErrNotFound, fs.ErrNotExist, fs.ErrPermission, syscall.EISDIR, exec.ErrDot...
}

func (e *ExecError) Error() string { return "runner: " + e.Path + ": " + e.Err.Error() }
func (e *ExecError) Unwrap() error { return e.Err }

// Lookup resolves argv0 as Start and Prepare do (exec.LookPath: on PATH
// unless it contains a '/'; the executable bit is checked) and starts
// nothing. A command that cannot be run is an *ExecError; nil means it
// could be started now.
//
// Limit: the file may change between Lookup and Start (removed, its mode
// changed): Start looks it up again and reports that the same way.
func Lookup(argv0 string) error {
	_, err := lookup(argv0)
	return err
}

// lookup returns the path argv0 resolves to, or an *ExecError.
func lookup(argv0 string) (string, error) {
	path, err := exec.LookPath(argv0)
	if err == nil {
		return path, nil
	}
	var lpErr *exec.Error
	if errors.As(err, &lpErr) {
		err = lpErr.Err
	}
	code := 126
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		code = 127
	}
	return "", &ExecError{Path: argv0, Code: code, Err: err}
}

// Process is a running command and its processes: its process group and,
// on Linux, every descendant. Its methods are safe for concurrent use.
type Process struct {
	log         hclog.Logger
	guard       *exec.Cmd
	guardReaped chan struct{} // closed once dismissGuard has reaped the guard
	pgid        int
	procs       tree // the command's processes: the guard's subtree and group
	stopSig     syscall.Signal
	grace       time.Duration
	tty         int      // the terminal handed to the group, -1 when none
	restoreTTOU func()   // ends the ignoring of SIGTTOU that began with the terminal's hand-over
	lifeline    *os.File // write end; the guard kills the command's processes when it is closed
	status      *os.File // read end; the guard writes the command's wait status to it

	killed chan struct{} // closed when SIGKILL is first sent
	done   chan struct{}
	result Result

	mu         sync.Mutex
	gone       bool      // the command's processes are gone: send nothing more
	signalErr  bool      // a failure to signal was logged: log no more of them
	stopSent   bool      // Stop's stop signal has been sent
	interrupts int       // outside SIGINTs handled
	killAt     time.Time // when SIGKILL is due; zero until a stop (Stop, an outside stop request)
	killTimer  *time.Timer
	killedAt   time.Time // when SIGKILL was first sent
}

// Start starts cfg.Argv in a new process group without waiting for it: it is
// Prepare (a command that cannot be run is an *ExecError, and nothing is
// started) followed by Launch(cfg.Env).
//
// The group is led by a guard (leaderrun re-executed, see RunGuard) whose
// child is the command, until the command has started: the guard then
// moves to a process group of its own, neither the command's nor
// leaderrun's. Promises and limits:
//   - On Linux every signal reaches every descendant of the command, in
//     whatever process group or session (a setsid daemon, a double fork,
//     what timeout(1) or nohup started in a group of its own): the guard is
//     their child subreaper, so an orphan among them is reparented to it,
//     never to init. A process handed to another service (systemd-run, a
//     job queue's daemon) is not a descendant and is out of reach.
//   - Every signal reaches the command's group as a whole, which the kernel
//     delivers to every member at once, forks in progress included. On
//     Linux the processes outside the group are found in /proc; one that
//     forks and exits without pause (a new pid every few hundred
//     microseconds) may be gone between the listing and the reading of its
//     pid, but its successor, an orphan, is a child of the guard (or of
//     leaderrun, the guard dead), whose children are read after each walk
//     (/proc/PID/task/TID/children) until they hold no pid gone meanwhile.
//   - Elsewhere (macOS) every signal goes to the command's process group,
//     pipelines and grandchildren included; processes that leave it
//     (setsid, setpgid: daemons) are out of reach.
//   - No signal to the command's group (its own `kill 0`, any stop signal)
//     nor to leaderrun's (`kill -9 %1`, timeout(1)) reaches the guard once
//     the command has started, and the guard catches every signal that can
//     be caught; with SIGKILL, leaderrun sends it SIGCONT (SIGSTOP cannot be
//     caught).
//   - If leaderrun dies, even by SIGKILL, the guard at once sends SIGKILL to
//     all of them, on every Unix system, or, if the command had not started
//     yet, never starts it. On Linux the command also has a parent-death
//     signal (SIGKILL) bound to the guard, so it cannot outlive a guard
//     killed alone, and what the guard had adopted is reparented to
//     leaderrun, itself a child subreaper, which stops it with the rest;
//     elsewhere leaderrun stops the command as a leftover. Killing both
//     leaderrun and its guard at once (pkill -9 leaderrun) leaves what left
//     the command's group to init.
//   - When the command exits, what it left running is stopped (stop
//     signal, grace, SIGKILL) before Done, still covered by the guard.
//   - If Stdin is the controlling terminal and leaderrun's group holds its
//     foreground, the command's group gets it (Ctrl-C, reading), and it is
//     given back before Done. Job control is not relayed: a command stopped
//     by Ctrl-Z stays stopped, holding the lease, until SIGCONT or a stop.
//
// The guard is leaderrun's own binary: /proc/self/exe on Linux (still right
// after an upgrade replaced the file), os.Executable elsewhere.
func Start(cfg Config) (*Process, error) {
	prep, err := Prepare(cfg)
	if err != nil {
		return nil, err
	}
	return prep.Launch(cfg.Env)
}

// Pid returns the id of the command's process group, which is also the pid
// of the guard, its leader until the command has started.
func (p *Process) Pid() int { return p.pgid }

// Done is closed when the command has exited and none of its processes
// runs any more (on Linux: none of its descendants, in any group; a zombie
// counts as gone only when no thread of it runs), or, SIGKILL sent, some
// still there after a few seconds (processes stuck in the kernel: they die
// as soon as they leave it; processes of another user, which an
// unprivileged leaderrun cannot signal: they run on). A guard that has not
// reported the command's end a few seconds after SIGKILL is killed, and
// Done follows a few seconds later at most.
func (p *Process) Done() <-chan struct{} { return p.done }

// Result returns how the command ended. It waits for Done.
func (p *Process) Result() Result {
	<-p.done
	return p.result
}
