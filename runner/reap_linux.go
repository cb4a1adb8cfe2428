package runner

// Reaping orphans: the guard, child subreaper of the command's subtree, is
// given every orphan of it; leaderrun running as PID 1 (a container's init)
// is given every orphan of its pid namespace. Both must reap them, or they
// stay zombies for ever, without taking the wait status of a child whose
// own waiter (os/exec) expects it: the command in the guard, the guard and
// the health check's shell in leaderrun.

import (
	"errors"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reaper reaps the children of this process that nobody else waits for.
// The children it must leave alone are registered through start. A nil
// reaper reaps nothing and only starts.
type reaper struct {
	mu   sync.Mutex
	own  map[int]<-chan struct{} // pid → closed once its own waiter has reaped it
	wake chan struct{}           // a child was started
}

func newReaper() *reaper {
	return &reaper{own: map[int]<-chan struct{}{}, wake: make(chan struct{}, 1)}
}

// pid1Reaper is leaderrun's reaper when it runs as PID 1, started on first
// use; nil otherwise (an orphan then goes to the real init).
var pid1Reaper = sync.OnceValue(func() *reaper {
	if os.Getpid() != 1 {
		return nil
	}
	r := newReaper()
	go r.run(false)
	return r
})

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

// run reaps children as they exit, skipping the registered ones, until
// this process has no child left if untilEmpty (the guard: its children
// are all the command's subtree, which cannot grow again once empty), for
// ever otherwise (PID 1: children come and go).
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
			// Its waiter reaps it; until then waitid keeps answering
			// with it.
			<-reaped
			r.mu.Lock()
			delete(r.own, pid)
			r.mu.Unlock()
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
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
