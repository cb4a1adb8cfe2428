package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pages writes the pages into a temporary directory and returns them by
// file name.
func pages(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("SOURCE_DATE_EPOCH", "1795651200") // 2026-11-26
	if err := write(dir, "v9.9.9"); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return dir, out
}

// Every page has the sections a reader looks for, in order, and none of a
// generator's leftovers.
func TestSections(t *testing.T) {
	_, got := pages(t)
	for _, page := range []string{"leaderrun.1", "leaderrun-status.1", "leaderrun-break.1", "leaderrun-check.1", "leaderrun-doctor.1", "leaderrun-list.1", "leaderrun-version.1"} {
		if got[page] == "" {
			t.Errorf("no page %s", page)
		}
	}
	sections := []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "EXAMPLES", "SEE ALSO"}
	heading := regexp.MustCompile(`(?m)^\.SH (.*)$`)
	for page, text := range got {
		var have []string
		for _, m := range heading.FindAllStringSubmatch(text, -1) {
			if name := strings.Trim(m[1], `"`); name != "SUBCOMMANDS" {
				have = append(have, name)
			}
		}
		if strings.Join(have, ",") != strings.Join(sections, ",") {
			t.Errorf("%s: sections %q, want %q", page, have, sections)
		}
		for _, bad := range []string{"[=false]", `=""`, "Auto generated", "spf13/cobra", ".SH HISTORY"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s has %q", page, bad)
			}
		}
		if !strings.Contains(text, `.TH "`+escape(strings.ToUpper(strings.TrimSuffix(page, ".1")))+`" 1 "2026-11-26" "leaderrun v9.9.9"`) {
			t.Errorf("%s: no title line for it, dated SOURCE_DATE_EPOCH:\n%.200s", page, text)
		}
	}
	root := got["leaderrun.1"]
	for _, s := range []string{
		`.SS "Lease"`, `.SS "Waiting"`, `.SS "Once and schedules"`, `.SS "Logging"`,
		`\fB\-v\fR, \fB\-\-version\fR`, `\fB\-n\fR, \fB\-\-no\-wait\fR` + "\n",
		`\fB\-l\fR, \fB\-\-lease\fR \fINAME\fR`,
		"\\fB76\\fR\n", "\\fBLEADERRUN_LEASE_DURATION\\fR\n", "\\fBAZURE_STORAGE_CONNECTION_STRING\\fR\n",
		`.SS "What COMMAND gets"`, `\-E 0 \-\-once\-per 4m`, ".BR leaderrun\\-status (1),",
	} {
		if !strings.Contains(root, s) {
			t.Errorf("leaderrun.1 has no %q", s)
		}
	}
	if !strings.Contains(got["leaderrun-check.1"], "\\fB3\\fR\nUNKNOWN") {
		t.Error("leaderrun-check.1 does not give check's own exit statuses")
	}
}

// mandoc -Tlint (every message, style included) finds nothing, when it is
// installed; under CI it must be (scripts/test.sh installs it).
func TestLint(t *testing.T) {
	mandoc, err := exec.LookPath("mandoc")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("mandoc not found: under CI the man pages must be linted (apt-get install mandoc)")
		}
		t.Skip("mandoc not found (apt-get install mandoc)")
	}
	dir, got := pages(t)
	var files []string
	for page := range got {
		files = append(files, filepath.Join(dir, page))
	}
	out, err := exec.Command(mandoc, append([]string{"-Tlint", "-W", "all"}, files...)...).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("mandoc -Tlint: %v\n%s", err, out)
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		`a\b`:     `a\eb`,
		"--once":  `\-\-once`,
		"±20%":    `\[u00B1]20%`,
		"@daily…": `@daily\[u2026]`,
	} {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
	var lines []string
	verbatim(func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }, escape(".x "+strings.Repeat("a-", 60)))
	if !strings.HasPrefix(lines[0], `\&.x`) || len(lines) < 2 {
		t.Errorf("verbatim: %q", lines)
	}
	for _, l := range lines {
		if len(l) > maxInput+1 || strings.HasSuffix(strings.TrimSuffix(l, `\`), `\`) {
			t.Errorf("verbatim line %q: too long, or cut in an escape", l)
		}
	}
}

func TestUsage(t *testing.T) {
	if code := run(nil); code != 2 {
		t.Errorf("no DIR: exit %d, want 2", code)
	}
}
