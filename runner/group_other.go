//go:build unix && !linux

package runner

import (
	"errors"

	"golang.org/x/sys/unix"
)

// alive reports whether the group still has a member. Without /proc,
// unreaped zombies count, which the bounded wait after SIGKILL absorbs.
func (g *groupWatch) alive() bool {
	err := unix.Kill(-g.pgid, 0)
	return !errors.Is(err, unix.ESRCH)
}
