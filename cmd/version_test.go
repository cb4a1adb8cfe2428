package cmd

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildVersionOf(t *testing.T) {
	const rev = "d2c721f92e748c17141d07dcc32c178dcfc63bfe"
	checkout := func(modified string) *debug.BuildInfo {
		return &debug.BuildInfo{
			Main: debug.Module{Path: "github.com/leaderrun/leaderrun", Version: "v0.0.0-20261123063205-d2c721f92e74"},
			Settings: []debug.BuildSetting{
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: rev},
				{Key: "vcs.modified", Value: modified},
			},
		}
	}
	tests := []struct {
		name                string
		info                *debug.BuildInfo
		ldVersion, ldCommit string
		wantVersion         string
		wantCommit          string
		wantDirty           bool
		wantText            string // in String()
	}{
		{"go install @tag", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "", "",
			"v1.2.3", "", false, "leaderrun v1.2.3 (commit unknown, "},
		{"clean checkout", checkout("false"), "", "",
			"v0.0.0-20261123063205-d2c721f92e74", "d2c721f92e74", false, "(commit d2c721f92e74, go"},
		{"dirty checkout", checkout("true"), "", "",
			"v0.0.0-20261123063205-d2c721f92e74", "d2c721f92e74", true, "(commit d2c721f92e74, with uncommitted changes, go"},
		{"devel without vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "",
			"dev", "", false, "leaderrun dev (commit unknown, "},
		{"no build info", nil, "", "", "dev", "", false, "leaderrun dev (commit unknown, "},
		{"release ldflags win", checkout("true"), "v1.4.0", rev, "v1.4.0", "d2c721f92e74", false, "leaderrun v1.4.0 (commit d2c721f92e74, go"},
		{"ldflags version only", checkout("false"), "v1.4.0", "", "v1.4.0", "d2c721f92e74", false, "leaderrun v1.4.0 (commit d2c721f92e74, go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := buildVersionOf(tt.info, tt.ldVersion, tt.ldCommit)
			if v.Version != tt.wantVersion || v.Commit != tt.wantCommit || v.Dirty != tt.wantDirty {
				t.Fatalf("got %+v, want version %q commit %q dirty %v", v, tt.wantVersion, tt.wantCommit, tt.wantDirty)
			}
			if s := v.String(); !strings.Contains(s, tt.wantText) {
				t.Fatalf("String() = %q, want it to contain %q", s, tt.wantText)
			}
		})
	}
}
