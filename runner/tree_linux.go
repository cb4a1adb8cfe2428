package runner

// The command's processes on Linux: the guard is the child subreaper of
// the command's whole subtree, so every descendant of the command, in
// whatever process group or session, stays a descendant of the guard; and
// leaderrun is the child subreaper of its own descendants, so that what a
// guard killed alone had adopted comes to leaderrun.

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// treeWalks: the command's processes are found in /proc, beyond its group;
// the guard, their subreaper, stays until it is dismissed.
const treeWalks = true

// becomeSubreaper makes this process (the guard, leaderrun) the child
// subreaper of its descendants: an orphan among them is reparented to it,
// never to init.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("runner: become the child subreaper: %w", err)
	}
	return nil
}

// tree is the command's processes: every member of its process group, every
// descendant of the guard (root, whose pid is the group's id), the guard
// itself excepted, and, once the guard has died (killed alone: the OOM
// killer, an operator), every process leaderrun adopted since (see
// ownReaper) and their descendants: the orphans the guard had adopted come
// to leaderrun, and leaderrun's own children (guards, health checks) are
// not among them. A stop signals each of them; the tree is empty when none
// has a thread that runs.
//
// Once the command has started, the guard is out of the group (see
// leaveGroup): every signal goes to the group as a whole, which the kernel
// delivers to every member at once, forks included, and the group is empty
// when kill(2) finds no member; /proc is walked for the processes outside
// it. While the guard is in the group, stop signals go to the group (the
// guard catches them) and SIGKILL to each member but the guard.
//
// Processes found in /proc are signalled through a pidfd opened before
// their stat line is read again: a process that died meanwhile, its pid
// reused, is left alone. Without a usable /proc (a pid namespace that did
// not mount its own), the tree falls back to the group: signals go to it
// as a whole, the guard included while it is there.
type tree struct {
	root  int
	guard bool // this process is the guard; otherwise leaderrun, its parent
}

// guardInGroup reports whether the guard is (still) in the command's group.
// It leaves the group once, never to come back.
func (t tree) guardInGroup() bool {
	pg, err := unix.Getpgid(t.root)
	return err == nil && pg == t.root
}

// guardDead reports, in leaderrun, whether the guard has died (it is
// leaderrun's child, reaped only once the tree is no longer used).
func (t tree) guardDead() bool {
	if t.guard {
		return false
	}
	s, err := readStat(t.root)
	return err != nil || s.state == 'Z' || s.state == 'X'
}

// testHookListed, when set by a test, is called by members between the
// listing of /proc and the reading of each process in it.
var testHookListed func(root int)

// members returns the processes of the tree, running or not, from one walk
// of /proc.
func (t tree) members() ([]procStat, error) {
	pids, err := listProcs()
	if err != nil {
		return nil, err
	}
	if testHookListed != nil {
		testHookListed(t.root)
	}
	procs := readProcs(pids)
	// After the walk: a guard that died during it had its children
	// reparented to leaderrun before it was seen dead.
	adopter, own := 0, (*reaper)(nil)
	if t.guardDead() {
		adopter, own = adoptedBy()
	}
	procs = addOrphans(procs, t.root, adopter)
	return treeMembers(t.root, procs, adopter, own.isOwn, readStat), nil
}

// orphanRounds bounds addOrphans' reads of the reapers' children.
const orphanRounds = 8

// addOrphans adds to procs, one walk of /proc, the children of the
// reapers (the guard, root; leaderrun, adopter, once the guard has died)
// that the walk did not list. A process that forks and exits at once
// (leaving by setsid, it is in no group that is signalled as a whole) can
// hop between the listing of /proc and the reading of its pid: the pid
// listed is gone, its successor was never listed. The successor, an
// orphan, is the child of its subreaper: it is found here, read again as
// long as it hops on, a few rounds at most.
func addOrphans(procs []procStat, root, adopter int) []procStat {
	seen := make(map[int]bool, len(procs))
	for _, p := range procs {
		seen[p.pid] = true
	}
	for range orphanRounds {
		missed := false
		for _, r := range []int{root, adopter} {
			if r <= 0 {
				continue
			}
			for _, c := range childrenOf(r) {
				if seen[c] {
					continue
				}
				if s, err := readStat(c); err == nil {
					seen[c] = true
					procs = append(procs, s)
				} else {
					missed = true // gone already: its successor may be next
				}
			}
		}
		if !missed {
			break
		}
	}
	return procs
}

// treeMembers picks the processes of the tree rooted at root out of procs,
// one walk of /proc: the members of group root, root's descendants and,
// with adopter set (the guard has died), the descendants of adopter's
// children that are not its own. A process whose parent is missing from
// procs is read again (reread): its parent exited and was reaped while the
// walk read others, after the process had been reparented (to the guard,
// or to leaderrun), and read again it names its new parent. procs is
// updated with what is read again.
func treeMembers(root int, procs []procStat, adopter int, isOwn func(pid int) bool,
	reread func(pid int) (procStat, error)) []procStat {
	at := make(map[int]int, len(procs)) // pid → index in procs
	for i, p := range procs {
		at[p.pid] = i
	}
	below := map[int]bool{root: true} // memo: pid is the root or below it
	if adopter > 0 {
		below[adopter] = false
	}
	reread1 := map[int]bool{} // read again already
	var path []int
	inTree := func(pid int) bool {
		path = path[:0]
		in := false
		for len(path) <= len(procs) {
			if v, ok := below[pid]; ok {
				in = v
				break
			}
			i, ok := at[pid]
			if !ok {
				break // gone
			}
			p := procs[i]
			if adopter > 0 && p.ppid == adopter {
				in = !isOwn(pid) // adopted: the guard's orphans, or theirs
				below[pid] = in
				break
			}
			if p.ppid <= 0 {
				break // init, or the kernel's threads
			}
			_, known := at[p.ppid]
			_, memo := below[p.ppid]
			if !known && !memo && !reread1[pid] {
				reread1[pid] = true
				if s, err := reread(pid); err == nil && s.start == p.start && s.ppid != p.ppid {
					procs[i] = s
					continue // the same process, under its new parent
				}
			}
			path = append(path, pid)
			pid = p.ppid
		}
		for _, p := range path {
			below[p] = in
		}
		return in
	}
	var out []procStat
	for i := range procs {
		p := procs[i]
		if p.pid != root && (p.pgrp == root || inTree(p.pid)) {
			out = append(out, procs[i])
		}
	}
	return out
}

// alive reports whether a process of the tree still has a running thread.
// Two walks of /proc must find none in a row: a process that forked and
// exited while one walk read others (the middle of a double fork) shows
// its child to the next.
func (t tree) alive() bool {
	if !procUsable() {
		g := groupWatch{pgid: t.root}
		return g.alive()
	}
	return t.look() || t.look()
}

// look is one look at the tree: whether the group has a member (the guard
// out of it: kill(2) says; zombies count, they are about to be reaped), or
// one walk of /proc finds a running process of the tree.
func (t tree) look() bool {
	inGroup := t.guardInGroup()
	if !inGroup && groupHasMember(t.root) {
		return true
	}
	members, err := t.members()
	if err != nil {
		return true
	}
	for _, m := range members {
		if m.running() {
			return true
		}
	}
	return false
}

// left returns the pids of the tree's processes that still run, for a log
// line.
func (t tree) left() []int {
	if !procUsable() {
		return nil
	}
	members, err := t.members()
	if err != nil {
		return nil
	}
	var pids []int
	for _, m := range members {
		if m.running() {
			pids = append(pids, m.pid)
		}
	}
	return pids
}

// signal sends sigs, in order, to every running process of the tree: to
// the group as a whole, then to each process outside it, found by one walk
// of /proc for all of them. While the guard is in the group, SIGKILL goes
// to each member instead, sparing the guard, which must outlive the tree to
// adopt and reap it.
func (t tree) signal(sigs ...syscall.Signal) error {
	var errs []error
	if !procUsable() {
		for _, sig := range sigs {
			errs = append(errs, signalGroup(t.root, sig))
		}
		return errors.Join(errs...)
	}
	inGroup := t.guardInGroup()
	for _, sig := range sigs {
		if !inGroup || sig != unix.SIGKILL {
			errs = append(errs, signalGroup(t.root, sig))
		}
	}
	members, err := t.members()
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("runner: list the command's processes: %w", err))...)
	}
	for _, m := range members {
		if !m.running() {
			continue
		}
		for _, sig := range sigs {
			if m.pgrp != t.root || inGroup && sig == unix.SIGKILL {
				errs = append(errs, signalProc(m, sig))
			}
		}
	}
	return errors.Join(errs...)
}

// signalProc sends sig to the process p describes, if it is still that
// process: its pidfd is opened first, then its stat read again, and the
// signal goes through the pidfd only if the start time is p's. A pid
// reused since the scan is left alone. Where pidfds are missing (Linux
// before 5.3) the signal goes by pid right after the check.
func signalProc(p procStat, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(p.pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil
	case errors.Is(err, unix.ENOSYS):
		fd = -1
	case err != nil:
		return fmt.Errorf("runner: open process %d: %w", p.pid, err)
	default:
		defer unix.Close(fd)
	}
	if now, err := readStat(p.pid); err != nil || now.start != p.start {
		return nil // gone, or another process
	}
	if fd >= 0 {
		err = unix.PidfdSendSignal(fd, sig, nil, 0)
	} else {
		err = unix.Kill(p.pid, sig)
	}
	if err == nil || errors.Is(err, unix.ESRCH) {
		return nil
	}
	return fmt.Errorf("runner: send %v to process %d: %w", sig, p.pid, err)
}
