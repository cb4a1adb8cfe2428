// Package cmd is leaderrun's command line: each command checks its flags
// into options, makes one call (leader.Run for a run, the lease package for
// the operator's commands), renders what comes back, and Execute turns the
// outcome into the exit status.
package cmd

import (
	"io"

	"github.com/spf13/cobra"
)

// Command returns leaderrun's command tree as the binary builds it, for
// tools that document it (scripts/man writes the man pages from it). It
// writes to io.Discard and runs nothing. The generator lives outside the
// binary so that leaderrun does not load a markdown and man-page renderer
// at every start.
func Command() *cobra.Command {
	a := &app{stdout: io.Discard, stderr: io.Discard, log: newLogger(io.Discard, logOptions{level: "info"})}
	return newRootCmd(a)
}

// Version is the version leaderrun reports and records in the metadata.
func Version() string { return versionShort() }
