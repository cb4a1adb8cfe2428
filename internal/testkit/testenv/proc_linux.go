package testenv

// Whether a pid still runs a given executable, on Linux: from /proc.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RunningExe reports whether pid is a live (not zombie) process running the
// executable exe. It guards leftover checks against pids reused by unrelated
// processes.
func RunningExe(pid int, exe string) bool {
	if f := StatFields(pid); len(f) == 0 || f[0] == "Z" || f[0] == "X" {
		return false
	}
	link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	link = strings.TrimSuffix(link, " (deleted)")
	want, err := filepath.EvalSymlinks(exe)
	if err != nil {
		want = exe
	}
	return link == want || link == exe
}
