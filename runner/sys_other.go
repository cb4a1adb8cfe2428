//go:build unix && !linux

// What other Unix systems do their own way: whether a process group still
// has a member, and the executable the guard is started from.

package runner

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// selfExe is the executable the guard is started from.
func selfExe() (string, error) { return os.Executable() }

// groupWatch tells whether a process group still has a member.
type groupWatch struct {
	pgid int
}

// alive reports whether the group still has a member. Unreaped zombies
// count here, which the bounded wait after SIGKILL absorbs.
func (g *groupWatch) alive() bool {
	return !errors.Is(unix.Kill(-g.pgid, 0), unix.ESRCH)
}
