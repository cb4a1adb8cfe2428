//go:build unix

package runner

// A process group as a whole (the command's or a health check's): sending it
// a signal, whether it still has a running member, waiting until it is empty.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// pollInterval is how often a group being emptied is looked at.
	pollInterval = 25 * time.Millisecond
	// killWait bounds the wait for a group to empty once SIGKILL has been
	// sent: a process stuck in the kernel (uninterruptible sleep) cannot be
	// waited for forever.
	killWait = 5 * time.Second
)

// signalGroup sends sig to every process of group pgid. A group that is
// already gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := unix.Kill(-pgid, sig)
	if err == nil || errors.Is(err, unix.ESRCH) {
		return nil
	}
	return fmt.Errorf("runner: send %v to process group %d: %w", sig, pgid, err)
}

// groupWatch tells whether a process group still has a running member.
type groupWatch struct {
	pgid int
	hint int // the last running member found, checked first
}

// alive reports whether a process of the group is still running. On Linux
// zombies do not count (read from /proc): they are dead and only wait to be
// reaped, which a container's init may never do. Elsewhere unreaped zombies
// count, which the bounded wait after SIGKILL absorbs.
func (g *groupWatch) alive() bool {
	if err := unix.Kill(-g.pgid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	if runtime.GOOS != "linux" {
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

// awaitEmpty waits until the group has no running member, looking every
// pollInterval, and reports whether it emptied. Until SIGKILL has been sent
// (killedAt non-zero) it only looks. After, every look that finds a member
// calls kill to send SIGKILL again (a process forking at the first one may
// have left a child that missed it), and the wait ends killWait after the
// first SIGKILL, empty or not.
func (g *groupWatch) awaitEmpty(killedAt func() time.Time, kill func()) bool {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		<-tick.C
		if !g.alive() {
			return true
		}
		at := killedAt()
		if at.IsZero() {
			continue
		}
		kill()
		if time.Since(at) > killWait {
			return false
		}
	}
}
