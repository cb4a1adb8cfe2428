package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are set at release build time with
// -ldflags "-X github.com/leaderrun/leaderrun/cmd.version=v1.2.3 -X ...cmd.commit=abc123";
// otherwise they come from the module's build information.
var (
	version = ""
	commit  = ""
)

type buildVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func currentVersion() buildVersion {
	v := buildVersion{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && v.Commit == "" {
				v.Commit = s.Value
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

// versionShort is what the holder records in the blob's metadata.
func versionShort() string { return currentVersion().Version }

func versionString() string {
	v := currentVersion()
	commit := v.Commit
	if commit == "" {
		commit = "unknown"
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
			switch output {
			case "text":
				fmt.Fprintln(a.stdout, versionString())
				return nil
			case "json":
				return writeJSON(a.stdout, currentVersion())
			}
			return usagef("invalid --output %q: use text or json", output)
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return c
}
