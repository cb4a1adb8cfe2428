//go:build unix && !linux

package runner

// The command's processes where there is no child subreaper (macOS): its
// process group.

import (
	"errors"
	"syscall"
)

// treeWalks: the command's processes are its group alone; leaderrun
// dismisses a guard still in it before waiting for the group to empty.
const treeWalks = false

// becomeSubreaper does nothing: there is no child subreaper here, and a
// process that leaves the group (setsid, a new group) is out of reach.
func becomeSubreaper() error { return nil }

// tree is the command's process group, whose id is root, the guard's pid.
// Once the command has started, the guard is out of it (see leaveGroup).
type tree struct {
	root  int
	guard bool // this process is the guard; otherwise leaderrun, its parent
}

// alive reports whether the group still has a member (the guard counts
// while it is in it).
func (t tree) alive() bool {
	g := groupWatch{pgid: t.root}
	return g.alive()
}

// left returns nothing: without /proc the members are not listed.
func (t tree) left() []int { return nil }

// signal sends sig to the whole group, the guard included while it is in
// it.
func (t tree) signal(sigs ...syscall.Signal) error {
	var errs []error
	for _, sig := range sigs {
		errs = append(errs, signalGroup(t.root, sig))
	}
	return errors.Join(errs...)
}
