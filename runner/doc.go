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
// The group is led by a guard, leaderrun re-executed (see RunGuard), which
// on Linux is the child subreaper of COMMAND's subtree (an orphan of it is
// reparented to the guard, which reaps it) and holds the read end of a pipe
// whose write end only leaderrun holds: at its end-of-file (leaderrun dead,
// even by SIGKILL) the guard sends SIGKILL to all of COMMAND's processes, so
// that none survives. Prepare starts the guard while leaderrun waits for the
// lease and Launch sends it the go-ahead once the lease is held; Start does
// both at once.
//
// The package builds on Unix only (Linux and macOS are the tested targets).
package runner
