package pdeath

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Start starts cmd on a new goroutine locked to its OS thread, adding the
// parent-death signal to cmd.SysProcAttr (creating it if nil; Setpgid and
// the rest are kept), and waits for it there. It returns once cmd has
// started, or with cmd.Start's error; done is closed once cmd has exited and
// been reaped, and cmd.ProcessState is then set. The caller must not call
// cmd.Wait.
func Start(cmd *exec.Cmd) (done <-chan struct{}, err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setDeathSignal(cmd.SysProcAttr)
	reaped := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			_ = cmd.Wait()
			close(reaped)
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return reaped, nil
}

// StartUnreaped is Start, except that exited is closed once cmd has exited
// but before it is reaped: on Linux it stays a zombie until reap is called,
// so its pid, and the id of the process group it leads, cannot be reused
// meanwhile, and signalling them stays safe. reap reaps it (once; later
// calls wait for the first), after which cmd.ProcessState is set; the
// caller must call it, and must not call cmd.Wait. Elsewhere cmd is reaped
// before exited is closed, and reap only waits for that.
func StartUnreaped(cmd *exec.Cmd) (exited <-chan struct{}, reap func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setDeathSignal(cmd.SysProcAttr)
	ended := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			awaitExit(cmd)
			close(ended)
		}
	}()
	if err := <-started; err != nil {
		return nil, nil, err
	}
	return ended, sync.OnceFunc(func() {
		<-ended
		if cmd.ProcessState == nil {
			_ = cmd.Wait()
		}
	}), nil
}
