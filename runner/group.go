//go:build unix

// The command's (or a health check's) process group as a whole: sending it
// a signal, and waiting until it is empty once SIGKILL has been sent. What
// tells whether a group still has a member is per system (groupWatch, in
// group_linux.go and group_other.go).

package runner

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// pollInterval is how often a group is looked at while it is being
	// emptied.
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

// awaitEmpty waits until the group has no running member, looking every
// pollInterval, the first time one interval from now. Once SIGKILL has been
// sent to the group (killedAt returns when, non-zero), every look that finds
// it not empty calls kill to send SIGKILL again, since a process that was
// forking at the first one may have left a child that did not get it, and
// the wait ends killWait after that first SIGKILL, empty or not. Until then
// (a grace running) it only looks. It reports whether the group emptied.
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
