// What Linux does its own way: whether a process group still has a running
// member (from /proc, so that zombies do not count), and the executable the
// guard is started from.

package runner

import (
	"bytes"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// selfExe is the executable the guard is started from. /proc/self/exe names
// leaderrun's own binary even if its file was replaced or removed since.
func selfExe() (string, error) { return "/proc/self/exe", nil }

// groupWatch tells whether a process group still has a running member.
type groupWatch struct {
	pgid int
	hint int // the last running member found, checked first
}

// alive reports whether a process of the group is still running. Zombies do
// not count: they are dead and only wait to be reaped, which a container's
// init may never do.
func (g *groupWatch) alive() bool {
	if err := unix.Kill(-g.pgid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	if g.hint > 0 && runningIn(g.hint, g.pgid) {
		return true
	}
	d, err := os.Open("/proc")
	if err != nil {
		return true
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return true
	}
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil && runningIn(pid, g.pgid) {
			g.hint = pid
			return true
		}
	}
	return false
}

// runningIn reports whether pid is a process of group pgid that is not a
// zombie, from /proc/<pid>/stat: "pid (comm) state ppid pgrp ...".
func runningIn(pid, pgid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return false
	}
	if state := string(f[0]); state == "Z" || state == "X" {
		return false
	}
	pg, err := strconv.Atoi(string(f[2]))
	return err == nil && pg == pgid
}
