// Package cmd is leaderrun's command line: each command checks its flags
// into options, makes one call (leader.Run for a run, the lease package for
// the operator's commands), renders what comes back, and Execute turns the
// outcome into the exit status.
package cmd

import (
	"io"

	"github.com/spf13/cobra"
)

// Command returns leaderrun's command tree, writing to io.Discard, for
// scripts/man, which writes the man pages from it: outside the binary, so
// that leaderrun does not load a man-page renderer at every start.
func Command() *cobra.Command {
	a := &app{stdout: io.Discard, stderr: io.Discard, log: newLogger(io.Discard, logOptions{level: "info"})}
	return newRootCmd(a)
}

// Version is the version leaderrun reports and records in the metadata.
func Version() string { return versionShort() }
