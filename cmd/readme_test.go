package cmd

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/leaderrun/leaderrun/exit"
)

// The README's "Exit status" table is what scripts branch on: every status
// of leaderrun's own has its row, and every line of the table is a row (an
// edit once pasted a paragraph over five of them).
func TestReadmeExitStatusTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Exit status\n")
	if !ok {
		t.Fatal("README.md has no '## Exit status' section")
	}
	table := regexp.MustCompile(`(?s)\n(\|.*?)\n\n`).FindStringSubmatch(section)
	if table == nil {
		t.Fatal("no table under '## Exit status'")
	}
	rows := map[string]bool{}
	for i, line := range strings.Split(table[1], "\n") {
		if !strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "|---") {
			t.Errorf("line %d of the table is not a row: %q", i+1, line)
			continue
		}
		first := strings.TrimSpace(strings.Split(line, "|")[1])
		rows[strings.Fields(first + " x")[0]] = true
	}
	for _, code := range []int{exit.OK, exit.Usage, exit.Unavailable, exit.Conflict, exit.Lost, exit.Unhealthy, exit.Timeout, exit.NotExec, exit.NotFound} {
		if !rows[strconv.Itoa(code)] {
			t.Errorf("no row for exit status %d", code)
		}
	}
	if !rows["128+N"] {
		t.Error("no row for 128+N")
	}
}

// readmeSection is the text of the README's section under heading, up to
// the next section of its level.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// The README's "Flags" lists every flag of a run, and its "Environment"
// every variable that sets one: a flag added to the command line is
// added there too.
func TestReadmeFlagsAndEnvironment(t *testing.T) {
	flags := readmeSection(t, "## Flags")
	for _, g := range DocOf(Command()).Groups {
		if g.Title == groupOther {
			continue
		}
		if !strings.Contains(flags, "**"+g.Title+"**") {
			t.Errorf("README's Flags has no group %q", g.Title)
		}
		for _, f := range g.Flags {
			if !strings.Contains(flags, "`"+strings.TrimSpace(f.Names())) && !strings.Contains(flags, "--"+f.Long+" ") {
				t.Errorf("README's Flags has no row for --%s", f.Long)
			}
		}
	}
	env := readmeSection(t, "## Environment")
	for flag, v := range flagEnv {
		if !strings.Contains(env, "| `"+v+"` | `--"+flag+"`") {
			t.Errorf("README's Environment has no row for %s (--%s)", v, flag)
		}
	}
}
