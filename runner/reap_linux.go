package runner

// Reaping orphans: the guard, child subreaper of the command's subtree, is
// given every orphan of it; leaderrun, child subreaper of its own
// descendants (see ownReaper), is given what a guard killed alone had
// adopted, what a health check left behind and, as PID 1 (a container's
// init), every orphan of its pid namespace. Both must reap them, or they
// stay zombies for ever, without taking the wait status of a child whose
// own waiter (os/exec) expects it: the command and the anchor in the guard,
// the guard and the health check's shell in leaderrun.

import (
	"errors"
	"os"
	"os/signal"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reaper reaps the children of this process that nobody else waits for.
// The children it must leave alone are registered through start: every
// child this process starts must be, once a reaper runs. A nil reaper reaps
// nothing and only starts.
type reaper struct {
	mu   sync.Mutex
	own  map[int]<-chan struct{} // pid → closed once its own waiter has reaped it
	wake chan struct{}           // a child was started
}

func newReaper() *reaper {
	return &reaper{own: map[int]<-chan struct{}{}, wake: make(chan struct{}, 1)}
}

// ownReaper is leaderrun's reaper, started on first use (the first Prepare
// or health check): leaderrun makes itself the child subreaper of its
// descendants (Linux 3.4 and later), so that what a guard killed alone had
// adopted comes to leaderrun, not to init, and the command's processes can
// still be told and stopped (see tree). As PID 1 it is given every orphan
// of its namespace anyway. Nil when neither holds: orphans then go to init.
var ownReaper = sync.OnceValue(func() *reaper {
	subreaper := becomeSubreaper() == nil
	if !subreaper && os.Getpid() != 1 {
		return nil
	}
	r := newReaper()
	go r.run(false)
	return r
})

// adoptedBy returns the process that adopts what a guard killed alone
// leaves behind, leaderrun itself, and r to tell its own children from
// them; 0 when orphans go to init.
func adoptedBy() (pid int, r *reaper) {
	if r = ownReaper(); r == nil {
		return 0, nil
	}
	return os.Getpid(), r
}

// start runs fn, which starts one child that this process waits for itself
// and returns its pid and a channel closed once that waiter has reaped it.
// Reaping is held off until the child is registered, so that a child that
// exits at once is never taken from its waiter.
func (r *reaper) start(fn func() (pid int, reaped <-chan struct{}, err error)) error {
	if r == nil {
		_, _, err := fn()
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for pid, reaped := range r.own { // forget those reaped unseen
		select {
		case <-reaped:
			delete(r.own, pid)
		default:
		}
	}
	pid, reaped, err := fn()
	if err != nil {
		return err
	}
	r.own[pid] = reaped
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

// isOwn reports whether pid is a child registered through start and not
// yet reaped by its waiter: a child this process started itself, not one
// it adopted.
func (r *reaper) isOwn(pid int) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	reaped, ok := r.own[pid]
	if !ok {
		return false
	}
	select {
	case <-reaped: // its pid may belong to another process now
		delete(r.own, pid)
		return false
	default:
		return true
	}
}

// run reaps children as they exit, skipping the registered ones, until
// this process has no child left if untilEmpty (the guard: its children
// are all the command's subtree, which cannot grow again once empty), for
// ever otherwise (leaderrun: children come and go).
func (r *reaper) run(untilEmpty bool) {
	if r == nil {
		return
	}
	for {
		pid, err := waitExited()
		switch {
		case errors.Is(err, unix.ECHILD):
			if untilEmpty {
				return
			}
			<-r.wake
			continue
		case err != nil:
			return // EINVAL and the like: nothing can be reaped here
		}
		r.mu.Lock()
		reaped, own := r.own[pid]
		r.mu.Unlock()
		if own {
			// Its waiter reaps it; until then waitid keeps answering with
			// it, and the others are reaped as they exit. A waiter may
			// hold its child unreaped on purpose for seconds (the guard
			// while the command's processes are stopped, a health check's
			// shell while its group empties).
			r.reapOthers(pid, reaped)
			r.mu.Lock()
			delete(r.own, pid)
			r.mu.Unlock()
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}
}

// reapOthers reaps the children that exit, other than the registered ones,
// looking at each SIGCHLD, until reaped is closed. Without a usable /proc
// it only waits.
func (r *reaper) reapOthers(pid int, reaped <-chan struct{}) {
	if !procUsable() {
		<-reaped
		return
	}
	exited := make(chan os.Signal, 1)
	signal.Notify(exited, unix.SIGCHLD)
	defer signal.Stop(exited)
	self := os.Getpid()
	for {
		// After Notify: a child that exits during the look is looked at
		// again.
		if procs, err := scanProcs(); err == nil {
			for _, p := range procs {
				if p.ppid == self && p.pid != pid && p.state == 'Z' && !r.isOwn(p.pid) {
					var ws unix.WaitStatus
					_, _ = unix.Wait4(p.pid, &ws, unix.WNOHANG, nil)
				}
			}
		}
		select {
		case <-reaped:
			return
		case <-exited:
		}
	}
}

// waitExited waits until a child has exited and returns its pid, leaving it
// unreaped (waitid with WNOWAIT).
func waitExited() (int, error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return siginfoPid(&info), nil
	}
}

// siginfoPid is si_pid of a SIGCHLD siginfo_t: the first field of the
// union that follows si_signo, si_errno and si_code, aligned as a pointer.
func siginfoPid(info *unix.Siginfo) int {
	const ptr = unsafe.Sizeof(uintptr(0))
	off := (3*unsafe.Sizeof(int32(0)) + ptr - 1) &^ (ptr - 1)
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}
