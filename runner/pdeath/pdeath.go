package pdeath

import (
	"os/exec"
	"runtime"
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
