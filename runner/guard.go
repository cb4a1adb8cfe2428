//go:build unix

// The guard: leaderrun re-executed with a hidden first argument, which
// leads the command's process group until the command has started, starts
// the command on leaderrun's go-ahead, adopts and reaps the command's
// orphans (Linux), and kills the command's processes when leaderrun dies or
// the kill deadline passes.

package runner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/leaderrun/leaderrun/runner/pdeath"
)

const (
	// guardArg is the hidden first argument that makes leaderrun a guard.
	guardArg = "__leaderrun-guard"
	// guardProtocol follows guardArg and names the way leaderrun and the
	// guard talk. A guard from another version of leaderrun (macOS, where the
	// guard is started from the executable's path, after an upgrade or a
	// downgrade) refuses what it does not know, so that no guard can start
	// the command without waiting for the go-ahead. v1 had none: the guard
	// started the command at once.
	guardProtocol = "v2"
	// anchorArg follows guardArg instead of guardProtocol for the guard's
	// anchor (see leaveGroup).
	anchorArg = "anchor"
	// The guard's inherited descriptors: the lifeline (read end; EOF means
	// leaderrun is gone), the status pipe (write end; the command's wait
	// status goes there) and the launch pipe (read end; the go-ahead comes
	// from there, see encodeLaunch).
	lifelineFD = 3
	statusFD   = 4
	launchFD   = 5
	// guardFailed is the guard's status when it cannot do its job at all,
	// as timeout(1) and env(1) use 125 for their own failures.
	guardFailed = 125
)

// RunGuard runs the guard when args (os.Args) ask for it; ok is false
// otherwise, and then it has done nothing. leaderrun's entry point must call
// it before anything else (before flag parsing, logging or signal set-up)
// and exit with code when ok is true.
//
// The guard is internal to Prepare and Start: it leads the command's process
// group, waits for leaderrun's go-ahead (the command's environment and kill
// deadline, see Launch), starts the command as its child, then moves to a
// process group of its own, so that the command's group holds the
// command's processes alone. It catches every signal that can be caught
// (the command keeps the default dispositions), and reports the command's
// wait status to leaderrun. On Linux it is the child subreaper of the
// command's subtree: it adopts and reaps every orphan of it, in whatever
// group or session, and stays until leaderrun dismisses it. It kills the
// command's processes with SIGKILL (on Linux the whole subtree, elsewhere
// the group) when leaderrun dies or when the kill deadline leaderrun last
// sent passes (Process.SetKillDeadline). If leaderrun dies, or the deadline
// passes, before the command has started, it never starts it. It prints
// nothing except a one-line message when the command cannot be executed
// (status 127 or 126). In ps it shows as "leaderrun __leaderrun-guard v2
// PATH -- COMMAND [ARG...]", and its anchor, for an instant, as "leaderrun
// __leaderrun-guard anchor". Run by hand, the guard refuses (status 125):
// it would take over its caller's group; the anchor only reads its standard
// input to its end and exits 0.
func RunGuard(args []string) (code int, ok bool) {
	if len(args) < 2 || args[1] != guardArg {
		return 0, false
	}
	if len(args) == 3 && args[2] == anchorArg {
		return runAnchor(), true
	}
	return runGuard(args[2:]), true
}

// runGuard is the guard. args are the protocol, the resolved path, "--",
// and the command's argv.
func runGuard(args []string) int {
	if len(args) < 1 || args[0] != guardProtocol {
		return guardFail("from another version of leaderrun")
	}
	args = args[1:]
	if len(args) < 3 || args[1] != "--" {
		return guardFail("malformed arguments")
	}
	path, argv := args[0], args[2:]
	pgid := os.Getpid()
	if unix.Getpgrp() != pgid {
		return guardFail("not a process group leader")
	}
	lifeline, status, launch, err := guardFiles()
	if err != nil {
		return guardFail(err.Error())
	}
	catchSignals()

	g := &gate{procs: tree{root: pgid, guard: true}}
	released := make(chan struct{})
	deadlines := make(chan int64, 1)
	// armed is closed once the go-ahead's deadline is in deadlines.
	armed := make(chan struct{})
	go watchLifeline(lifeline, g, deadlines, armed, released)
	go deadManSwitch(g, deadlines, released)

	deadline, env, err := decodeLaunch(launch)
	launch.Close()
	switch {
	case errors.Is(err, io.EOF):
		// Discarded, or leaderrun died (then the lifeline's end is seen
		// too): start nothing.
		return guardFailed
	case err != nil:
		return guardFail("go-ahead: " + err.Error())
	}
	if deadline != 0 {
		g.setDeadline(deadline)
		deadlines <- deadline
	}
	close(armed)

	code, sig := runCommand(g, path, argv, env)
	_, _ = status.WriteString(formatStatus(code, sig))
	// Wait for leaderrun to dismiss the guard (SIGKILL) or to die.
	<-released
	if sig != 0 {
		return 128 + int(sig)
	}
	return code
}

// gate decides, once, whether the command starts: a kill (leaderrun's end,
// the kill deadline) and the start are decided under one lock, so that no
// command can start after a kill that could not see it. After the start, a
// kill finds the command among the guard's processes.
type gate struct {
	procs    tree
	mu       sync.Mutex
	killed   bool  // a kill has begun: start nothing
	deadline int64 // the latest kill deadline received; 0: none
}

// setDeadline records the latest kill deadline, which the start checks.
func (g *gate) setDeadline(deadline int64) {
	g.mu.Lock()
	g.deadline = deadline
	g.mu.Unlock()
}

// kill kills the command's processes, and keeps any from starting.
func (g *gate) kill() {
	g.mu.Lock()
	g.killed = true
	g.mu.Unlock()
	g.procs.kill()
}

// start calls fn, which starts the command, unless a kill has begun or the
// latest kill deadline has passed; started reports whether fn was called.
func (g *gate) start(fn func() error) (started bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.killed || g.deadline != 0 && untilMonotonic(g.deadline) <= 0 {
		return false, nil
	}
	return true, fn()
}

// guardFiles checks and opens the descriptors leaderrun hands the guard.
func guardFiles() (lifeline, status, launch *os.File, err error) {
	for _, fd := range []int{lifelineFD, statusFD, launchFD} {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return nil, nil, nil, fmt.Errorf("descriptor %d: %w", fd, err)
		}
		// None may reach the command: the lifeline must close when
		// leaderrun dies, whatever the command does.
		unix.CloseOnExec(fd)
	}
	// The go-ahead must wake the guard at once: a plain blocking read, with
	// no poller in between.
	if err := unix.SetNonblock(launchFD, false); err != nil {
		return nil, nil, nil, fmt.Errorf("descriptor %d: %w", launchFD, err)
	}
	return os.NewFile(lifelineFD, "lifeline"), os.NewFile(statusFD, "status"), os.NewFile(launchFD, "launch"), nil
}

// catchSignals catches and drops, for the guard's whole life, every signal
// that can be caught: leaderrun sends every signal to the command's
// processes itself, and the guard must outlive them. Until the command has
// started, and an instant after, the guard is in the command's group, which
// any stop signal of --kill-signal, the terminal's job-control signals
// (Ctrl-Z goes to the whole foreground group) and the command's own
// `kill 0` reach; a Go program dies of many of them (SIGABRT, SIGSYS,
// SIGTRAP with a stack dump), and a stopped guard would neither report the
// command's exit, nor read the lifeline, nor keep the kill deadline. They
// are caught, not ignored, because an ignored disposition would be
// inherited by the command across exec: the command keeps the defaults.
// SIGKILL and SIGSTOP cannot be caught: leaderrun never sends them to the
// guard while it works, and sends SIGCONT with every SIGKILL.
func catchSignals() {
	caught := make(chan os.Signal, 16)
	for sig := syscall.Signal(1); sig < 32; sig++ {
		// A signal the guard inherited ignored stays ignored, for the guard
		// and for the command: leaderrun keeps a disposition to ignore
		// that it inherited (nohup's SIGHUP) and so passes it on.
		// (Real-time signals, 32 and up, do not end a Go program.)
		if sig == syscall.SIGKILL || sig == syscall.SIGSTOP || signal.Ignored(sig) {
			continue
		}
		signal.Notify(caught, sig)
	}
	go func() {
		for range caught {
		}
	}()
}

// watchLifeline reads the kill deadlines leaderrun sends on the lifeline
// into deadlines, keeping only the latest, once armed is closed. When the
// lifeline ends (leaderrun is gone, or done), it kills the command's
// processes, or keeps the command from starting, and closes released.
func watchLifeline(lifeline *os.File, g *gate, deadlines chan int64, armed, released chan struct{}) {
	var buf [8]byte
	for {
		if _, err := io.ReadFull(lifeline, buf[:]); err != nil {
			break
		}
		// Deadlines come on the lifeline only after the go-ahead, which
		// carries the one set before it: none may overtake that one.
		<-armed
		// Keep only the latest deadline.
		select {
		case <-deadlines:
		default:
		}
		deadlines <- int64(binary.BigEndian.Uint64(buf[:]))
	}
	// Nothing of the command may outlive leaderrun: the guard kills it all
	// and, a subreaper, stays until it is gone (bounded), so that no orphan
	// goes to init meanwhile.
	g.kill()
	close(released)
}

// deadManSwitch kills the command's processes, or keeps the command from
// starting, when the latest kill deadline leaderrun sent
// (Process.SetKillDeadline) passes before a later one arrives. It ends
// early only with released, closed after a kill.
func deadManSwitch(g *gate, deadlines <-chan int64, released <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var deadline int64
	for {
		select {
		case <-released:
			return
		case deadline = <-deadlines:
			g.setDeadline(deadline)
			timer.Reset(untilMonotonic(deadline))
		case <-timer.C:
			if left := untilMonotonic(deadline); left > 0 {
				timer.Reset(left)
				continue
			}
			g.kill()
			return
		}
	}
}

// runCommand runs the command as the guard's child, in the guard's group,
// with env as its whole environment, unless a kill came first or the kill
// deadline has passed (then it reports SIGKILL, as if the command had been
// killed at once), and returns how it ended. On Linux the guard becomes the
// child subreaper first, and reaps the orphans it adopts from then on, never
// the command, which its own waiter reaps. Once the command has started, the
// guard leaves its group.
func runCommand(g *gate, path string, argv, env []string) (code int, sig syscall.Signal) {
	cmd := &exec.Cmd{
		Path:   path,
		Args:   argv,
		Env:    env,
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	}
	// Without it (Linux before 3.4) the command's group is still covered.
	_ = becomeSubreaper()
	orphans := newReaper()
	// On Linux the command gets a parent-death signal, so that it cannot
	// outlive the guard.
	var done <-chan struct{}
	started, err := g.start(func() error {
		return orphans.start(func() (int, <-chan struct{}, error) {
			var err error
			if done, err = pdeath.Start(cmd); err != nil {
				return 0, nil, err
			}
			return cmd.Process.Pid, done, nil
		})
	})
	switch {
	case !started:
		return -1, unix.SIGKILL
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		// The guard's one line to the terminal: with SIGTTOU ignored, so
		// that `stty tostop` cannot stop it there. No command inherits that.
		signal.Ignore(syscall.SIGTTOU)
		fmt.Fprintf(os.Stderr, "leaderrun: %s: %v\n", path, err)
		if errors.Is(err, fs.ErrNotExist) {
			return 127, 0
		}
		return 126, 0
	}
	// Before the command's end is reported, so that leaderrun finds the
	// group without the guard. If this fails, the guard stays in the group,
	// which leaderrun tells (the group is then signalled process by
	// process, sparing the guard).
	_ = leaveGroup(orphans)
	go orphans.run(true)
	<-done
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal()
	}
	return cmd.ProcessState.ExitCode(), 0
}

// leaveGroup moves the guard out of the command's process group, which it
// led so that the command would start in it, into a group of its own: then
// a signal to the command's group as a whole (kill(2) of -PGID), which the
// kernel delivers to every member at once, forks in progress included,
// reaches the command's processes and never the guard, and an empty group
// means that none of them is left in it. The guard's own group cannot be
// leaderrun's, which a job-control signal or a kill of leaderrun's job as a
// whole (`kill -9 %1`, timeout(1)) reaches: the guard must outlive
// leaderrun to kill what it leaves. A group leader cannot start a group of
// its own, and a process can only join a group that exists: the anchor,
// leaderrun re-executed in a group of its own, makes one, which the guard
// joins; the anchor is then killed and reaped, before the command's end
// can be reported, and the group stays the guard's alone, its id unusable
// by any other process while the guard is in it.
func leaveGroup(orphans *reaper) error {
	self, err := selfExe()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer w.Close()
	anchor := &exec.Cmd{
		Path:        self,
		Args:        []string{"leaderrun", guardArg, anchorArg},
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	reaped := make(chan struct{})
	err = orphans.start(func() (int, <-chan struct{}, error) {
		if err := anchor.Start(); err != nil {
			return 0, nil, err
		}
		return anchor.Process.Pid, reaped, nil
	})
	r.Close()
	if err != nil {
		return err
	}
	go func() {
		_ = anchor.Wait()
		close(reaped)
	}()
	// The anchor waits for the end of its input, which comes after this:
	// its group is there to join.
	err = unix.Setpgid(0, anchor.Process.Pid)
	// Then it goes at once (by pid: an unreaped child), before the guard
	// can report the command's end: leaderrun would count it among what the
	// command left running.
	_ = anchor.Process.Kill()
	<-reaped
	if err != nil {
		return fmt.Errorf("runner: leave the command's process group: %w", err)
	}
	return nil
}

// runAnchor is the guard's anchor (see leaveGroup): it waits for the end
// of its standard input (the guard's end, if the guard dies before it
// kills it).
func runAnchor() int {
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

func guardFail(why string) int {
	fmt.Fprintf(os.Stderr, "leaderrun: %s is internal to leaderrun: %s\n", guardArg, why)
	return guardFailed
}
