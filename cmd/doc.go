// Package cmd is leaderrun's command line: each command checks its flags
// into options, makes one call (leader.Run for a run, the lease package for
// the operator's commands), renders what comes back, and Execute turns the
// outcome into the exit status.
package cmd
