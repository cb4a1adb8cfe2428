//go:build unix

package runner

// A process group as a whole (a health check's, and the command's where
// there is no subreaper): sending it a signal, whether it still has a
// running member, and waiting until a set of processes is empty.

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
	// guardNudge is how often a working guard gets SIGCONT, so that one
	// stopped by SIGSTOP goes on (awaitReport).
	guardNudge = time.Second
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

// groupHasMember reports whether process group pgid has a member, a
// zombie included (kill(2) finds one; EPERM: one of another user's).
func groupHasMember(pgid int) bool {
	return !errors.Is(unix.Kill(-pgid, 0), unix.ESRCH)
}

// groupWatch tells whether a process group still has a running member
// (alive: group_linux.go, group_other.go).
type groupWatch struct {
	pgid int
	hint int // the last running member found, checked first
}

// watcher is a set of processes that can tell whether one of them still
// runs: a group (groupWatch) or the command's processes (job).
type watcher interface{ alive() bool }

// awaitEmpty waits until w has no running process, looking every
// pollInterval, and reports whether it emptied. Until SIGKILL has been sent
// (killedAt non-zero) it only looks. After, every look that finds one
// calls kill to send SIGKILL again (a process forking at the first one may
// have left a child that missed it), and the wait ends killWait after the
// first SIGKILL, empty or not.
func awaitEmpty(w watcher, killedAt func() time.Time, kill func()) bool {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		<-tick.C
		if !w.alive() {
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
