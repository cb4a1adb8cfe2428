//go:build unix && !linux

package runner

// Without a child subreaper there are no orphans of the command to reap
// (they go to launchd), and leaderrun is never PID 1.

// reaper only starts: a nil one is all there is.
type reaper struct{}

func newReaper() *reaper { return nil }

func ownReaper() *reaper { return nil }

func adoptedBy() (int, *reaper) { return 0, nil }

func (r *reaper) start(fn func() (pid int, reaped <-chan struct{}, err error)) error {
	_, _, err := fn()
	return err
}

func (r *reaper) isOwn(pid int) bool { return false }

func (r *reaper) run(untilEmpty bool) {}
