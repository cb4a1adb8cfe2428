//go:build unix && !linux

package runner

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// selfExe is the executable the guard is started from.
func selfExe() (string, error) { return os.Executable() }

// commandAttr is how the guard starts the command. There is no parent-death
// signal outside Linux: the guard's lifeline is what covers the group.
func commandAttr() *syscall.SysProcAttr { return nil }

// groupWatch tells whether a process group still has a member.
type groupWatch struct {
	pgid int
}

// alive reports whether the group still has a member. Unreaped zombies
// count here, which the bounded wait after SIGKILL absorbs.
func (g *groupWatch) alive() bool {
	return !errors.Is(unix.Kill(-g.pgid, 0), unix.ESRCH)
}
