//go:build unix && !linux

// Whether a process group still has a member, outside Linux.

package runner

import (
	"errors"

	"golang.org/x/sys/unix"
)

// groupWatch tells whether a process group still has a member.
type groupWatch struct {
	pgid int
}

// alive reports whether the group still has a member. Unreaped zombies
// count here, which the bounded wait after SIGKILL absorbs.
func (g *groupWatch) alive() bool {
	return !errors.Is(unix.Kill(-g.pgid, 0), unix.ESRCH)
}
