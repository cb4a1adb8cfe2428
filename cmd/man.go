package cmd

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd writes man pages generated from the command tree; it is hidden
// because it is for packagers (scripts/release.sh), not for users.
func newManCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write leaderrun's man pages into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return exitWith(exitInternal, err)
			}
			header := &doc.GenManHeader{Title: "LEADERRUN", Section: "1", Source: "leaderrun " + versionShort()}
			if err := doc.GenManTree(c.Root(), header, dir); err != nil {
				return exitWith(exitInternal, err)
			}
			a.log.Info("wrote man pages", "dir", dir)
			return nil
		},
	}
}
