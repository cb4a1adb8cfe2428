// Package runner runs leaderrun's COMMAND: in its own process group, with
// every signal sent to the whole group, stopped by signal, grace and SIGKILL,
// and reported as an exit status.
//
// The command is not started by leaderrun directly but by a guard: leaderrun
// re-executed with a hidden first argument (see RunGuard). The guard leads the
// command's process group and holds the read end of a pipe whose write end
// only leaderrun holds. When that pipe reports end-of-file, leaderrun has died
// (even by SIGKILL) and the guard sends SIGKILL to the whole group, so no
// grandchild that stayed in the group survives leaderrun.
//
// Start starts the guard and the command at once. Prepare starts the guard
// ahead of time, while leaderrun still waits for the lease; the guard then
// waits, blocked in a read, for the go-ahead (the command's environment and
// kill deadline) that Launch sends once the lease is held, so that only the
// command's own start remains between holding the lease and running it.
//
// The package builds on Unix systems only (Linux and macOS are the tested
// targets); Windows is not supported.
package runner
