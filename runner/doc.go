// Package runner runs leaderrun's COMMAND: in its own process group, every
// signal sent to the whole group, stopped by signal, grace and SIGKILL, and
// reported as an exit status.
//
// The command is started by a guard: leaderrun re-executed with a hidden
// first argument (see RunGuard), which leads the group and holds the read end
// of a pipe whose write end only leaderrun holds. When that pipe reports
// end-of-file, leaderrun has died (even by SIGKILL) and the guard sends
// SIGKILL to the whole group, so no grandchild that stayed in it survives.
//
// Start starts the guard and the command at once. Prepare starts the guard
// while leaderrun waits for the lease, and Launch sends it the go-ahead once
// the lease is held, so that only the command's own start remains between.
//
// The package builds on Unix only (Linux and macOS are the tested targets).
package runner
