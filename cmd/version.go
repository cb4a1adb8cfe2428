package cmd

// The version command, and the version leaderrun records in the blob's
// metadata: what the build says about itself.

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit may be set at build time, as scripts/release.sh does:
// -ldflags "-X github.com/leaderrun/leaderrun/cmd.version=v1.2.3 -X ...cmd.commit=abc123".
// What they leave empty comes from the build information (buildVersionOf).
var version, commit string

type buildVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Dirty     bool   `json:"dirty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func currentVersion() buildVersion {
	info, _ := debug.ReadBuildInfo()
	return buildVersionOf(info, version, commit)
}

// buildVersionOf decides what leaderrun says it is, from the -ldflags
// overrides and the build information (nil when there is none):
//   - the version: the override, else the main module's version: the tag for
//     `go install …@v1.2.3`, from Go 1.24 on a pseudo-version (with "+dirty"
//     for a modified tree) for a build from a checkout; "(devel)" and "" read
//     as "dev";
//   - the commit: the override, else vcs.revision, which the go command
//     records for a build from a git checkout (not for a module download, not
//     with -buildvcs=false, not in a git worktree or submodule, whose .git is
//     a file), cut to 12 hex digits;
//   - dirty: vcs.modified; false with an overridden commit.
func buildVersionOf(info *debug.BuildInfo, ldVersion, ldCommit string) buildVersion {
	v := buildVersion{Version: ldVersion, Commit: ldCommit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info != nil {
		if v.Version == "" && info.Main.Version != "(devel)" {
			v.Version = info.Main.Version
		}
		if ldCommit == "" {
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					v.Commit = s.Value
				case "vcs.modified":
					v.Dirty = s.Value == "true"
				}
			}
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	if len(v.Commit) > 12 {
		v.Commit = v.Commit[:12]
	}
	return v
}

// Version is the version leaderrun reports and records in the metadata.
func Version() string { return currentVersion().Version }

func (v buildVersion) String() string {
	commit := v.Commit
	switch {
	case commit == "":
		commit = "unknown"
	case v.Dirty:
		commit += ", with uncommitted changes"
	}
	return fmt.Sprintf("leaderrun %s (commit %s, %s, %s)", v.Version, commit, v.GoVersion, v.Platform)
}

func newVersionCmd(a *app) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:     "version",
		Short:   "Print leaderrun's version, commit and Go version",
		Example: "  leaderrun version\n  leaderrun version -o json",
		Args:    unexpectedArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(a.stdout, currentVersion())
			}
			fmt.Fprintln(a.stdout, currentVersion())
			return nil
		},
	}
	addOutputFlag(c.Flags(), &output)
	return c
}
