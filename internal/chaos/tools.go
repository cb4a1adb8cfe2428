package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
