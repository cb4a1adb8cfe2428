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
	for _, code := range []int{exit.OK, exit.Usage, exit.Unavailable, exit.Conflict, exit.Lost, exit.Unhealthy, exit.NotExec, exit.NotFound} {
		if !rows[strconv.Itoa(code)] {
			t.Errorf("no row for exit status %d", code)
		}
	}
	if !rows["128+N"] {
		t.Error("no row for 128+N")
	}
}
