//go:build unix

// A process group as a whole (the command's or a health check's): sending it
// a signal, waiting until it is empty. Whether it has a member is per system
// (groupWatch).

package runner

import (
	"errors"
	"fmt"
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
