package runner

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// alive reports whether a process of the group still runs. Zombies do not
// count (read from /proc): they are dead and only wait to be reaped, which
// a container's init may never do; a zombie whose other threads still run
// does (procStat.running). Without a usable /proc, unreaped zombies count,
// which the bounded wait after SIGKILL absorbs.
func (g *groupWatch) alive() bool {
	if err := unix.Kill(-g.pgid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	if !procUsable() {
		return true
	}
	if g.hint > 0 && runningIn(g.hint, g.pgid) {
		return true
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range procs {
		if pid, err := strconv.Atoi(e.Name()); err == nil && runningIn(pid, g.pgid) {
			g.hint = pid
			return true
		}
	}
	return false
}

// runningIn reports whether pid is a process of group pgid with a thread
// that still runs.
func runningIn(pid, pgid int) bool {
	s, err := readStat(pid)
	return err == nil && s.pgrp == pgid && s.running()
}
