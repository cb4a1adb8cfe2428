// Package runner runs leaderrun's COMMAND: every signal sent to all of its
// processes, stopped by signal, grace and SIGKILL, and reported as an exit
// status.
//
// COMMAND's processes are, on Linux, every descendant of COMMAND, in
// whatever process group or session (a setsid daemon, a double fork,
// timeout(1)'s group), and every member of its process group; on macOS, its
// process group alone: a process that leaves the group there is out of
// reach. A process counts as gone only when no thread of it runs.
//
// COMMAND is started by a guard, leaderrun re-executed (see RunGuard), which
// leads COMMAND's process group until COMMAND has started in it, then moves
// to a process group of its own: a signal to COMMAND's group as a whole
// reaches all of its members at once, forks in progress included, and
// never the guard. On Linux the guard is the child subreaper of COMMAND's
// subtree (an orphan of it is reparented to the guard, which reaps it), and
// leaderrun is the child subreaper of its own descendants, so that what a
// guard killed alone had adopted comes to leaderrun, which stops it with
// the rest. The guard holds the read end of a pipe whose write end only
// leaderrun holds: at its end-of-file (leaderrun dead, even by SIGKILL) the
// guard sends SIGKILL to all of COMMAND's processes, or, if COMMAND had not
// started yet, never starts it. Prepare starts the guard while leaderrun
// waits for the lease and Launch sends it the go-ahead once the lease is
// held; Start does both at once.
//
// On Linux, once Prepare, Start or StartHealth has run, the calling process
// reaps every child of its own that this package did not start (the
// orphans it adopts): a program that uses the package must start no other
// child process, whose exit status would be taken from its Wait.
//
// The package builds on Unix only (Linux and macOS are the tested targets).
package runner
