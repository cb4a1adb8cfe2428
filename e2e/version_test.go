package e2e

// leaderrun version, built from a git checkout, names the checkout's
// commit and says whether the tree had uncommitted changes.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// TestVersionFromCheckout copies the module's files (as git sees them, so
// this test checks the code as it is now) into a fresh git repository,
// commits them, builds leaderrun there with VCS stamping on, and checks that
// `leaderrun version` names that commit, clean; then again with an
// uncommitted change, which it must call dirty. A repository of its own
// because the go command records nothing for a git worktree (its .git is a
// file) or under -buildvcs=false, which a machine's go env may set.
func TestVersionFromCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds leaderrun twice")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	repo, git := snapshotRepo(t)
	head := git("rev-parse", "HEAD")

	version := func() (v struct {
		Version string `json:"version"`
		Commit  string `json:"commit"`
		Dirty   bool   `json:"dirty"`
	}) {
		t.Helper()
		bin := filepath.Join(t.TempDir(), "leaderrun")
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Dir = repo
		build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("leaderrun version: %v", err)
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("leaderrun version -o json: %v: %s", err, out)
		}
		t.Logf("leaderrun version -o json: %s", strings.TrimSpace(string(out)))
		return v
	}

	v := version()
	if v.Commit != head[:12] || v.Dirty {
		t.Fatalf("clean checkout at %s: got commit %q dirty %v", head, v.Commit, v.Dirty)
	}
	if v.Version == "dev" || v.Version == "" {
		t.Errorf("clean checkout: version %q, want the module's pseudo-version", v.Version)
	}
	// An uncommitted change to a tracked file.
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v = version()
	if v.Commit != head[:12] || !v.Dirty {
		t.Fatalf("modified checkout at %s: got commit %q dirty %v", head, v.Commit, v.Dirty)
	}
}

// snapshotRepo copies the module's files, as git sees them in the working
// tree, into a new git repository with one commit, and returns it with a
// function that runs git there.
func snapshotRepo(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ls := exec.Command("git", "ls-files", "-co", "--exclude-standard")
	ls.Dir = root
	files, err := ls.Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	repo := t.TempDir()
	for _, f := range strings.Split(strings.TrimSpace(string(files)), "\n") {
		data, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(repo, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		c := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.invalid",
			"-c", "commit.gpgsign=false"}, args...)...)
		c.Dir = repo
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "snapshot")
	return repo, git
}
