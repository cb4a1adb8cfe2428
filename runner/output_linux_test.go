package runner

import (
	"os"
	"testing"
)

// A terminal is told from a file: an interactive COMMAND keeps it.
func TestTerminal(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if Terminal(f) {
		t.Error("a file is taken for a terminal")
	}
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skip("no pseudo-terminals here")
	}
	_, pts := openPty(t)
	defer pts.Close()
	if !Terminal(pts) {
		t.Error("a pseudo-terminal is not taken for a terminal")
	}
}
