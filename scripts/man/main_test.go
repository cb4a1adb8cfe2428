package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	if err := write(dir, "v9.9.9"); err != nil {
		t.Fatal(err)
	}
	for page, want := range map[string][]string{
		"leaderrun.1":        {"--once-per", "leaderrun v9.9.9", "EXAMPLE"},
		"leaderrun-status.1": {"status", `.TH "LEADERRUN-STATUS" "1"`},
		"leaderrun-break.1":  {"break"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range want {
			if !strings.Contains(string(b), s) {
				t.Errorf("%s: no %q", page, s)
			}
		}
	}
}

func TestUsage(t *testing.T) {
	if code := run(nil); code != 2 {
		t.Errorf("no DIR: exit %d, want 2", code)
	}
}
