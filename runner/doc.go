// Package runner runs leaderrun's COMMAND: in its own process group, every
// signal sent to the whole group, stopped by signal, grace and SIGKILL, and
// reported as an exit status.
//
// The group is led by a guard, leaderrun re-executed (see RunGuard), which
// holds the read end of a pipe whose write end only leaderrun holds: at its
// end-of-file (leaderrun dead, even by SIGKILL) the guard sends SIGKILL to
// the whole group, so no grandchild that stayed in it survives. Prepare
// starts the guard while leaderrun waits for the lease and Launch sends it
// the go-ahead once the lease is held; Start does both at once.
//
// The package builds on Unix only (Linux and macOS are the tested targets).
package runner
