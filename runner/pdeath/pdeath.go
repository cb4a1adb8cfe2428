package pdeath

import (
	"os/exec"
	"runtime"
)

// Start starts cmd on a new goroutine locked to its OS thread, adding the
// parent-death signal to cmd.SysProcAttr (creating it if nil; Setpgid and
// the rest are kept), and waits for it there. It returns once cmd has
// started, or with cmd.Start's error; done is closed once cmd has exited and
// been reaped, and cmd.ProcessState is then set. The caller must not call
// cmd.Wait.
func Start(cmd *exec.Cmd) (done <-chan struct{}, err error) {
	setDeathSignal(cmd)
	reaped := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(reaped)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return reaped, nil
}
