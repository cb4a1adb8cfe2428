package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// The drivers under scripts/ (chaos and bench) share these.

// ModuleRoot is the directory of go.mod, from the working directory up.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the leaderrun repository (no go.mod found)")
		}
		dir = parent
	}
}

// StartAzurite starts the emulator with scripts/azurite.sh, in
// $AZURITE_STATE_DIR if set (the wrapper scripts set it, to stop it even if
// the driver is killed), else under work, and returns its connection
// string; stop stops it.
func StartAzurite(ctx context.Context, root, work string) (cs string, stop func(), err error) {
	state := os.Getenv("AZURITE_STATE_DIR")
	if state == "" {
		state = filepath.Join(work, "azurite")
	}
	script := filepath.Join(root, "scripts", "azurite.sh")
	env := append(os.Environ(), "AZURITE_STATE_DIR="+state)
	cmd := exec.CommandContext(ctx, script, "start")
	cmd.Env, cmd.Stderr = env, os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, fmt.Errorf("scripts/azurite.sh start: %w", err)
	}
	stop = func() {
		c := exec.Command(script, "stop")
		c.Env, c.Stderr = env, os.Stderr
		_ = c.Run()
	}
	return strings.TrimSpace(string(out)), stop, nil
}

// StartLogged starts cmd with its standard output and error appended to
// logPath, in its own process group and with a parent-death signal (see
// sysProcAttr), so that nothing a driver starts outlives it. The goroutine
// that starts the process keeps its OS thread until the process has been
// reaped, as the parent-death signal requires; done is closed then.
func StartLogged(cmd *exec.Cmd, logPath string) (done <-chan struct{}, err error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
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
