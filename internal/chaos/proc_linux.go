package chaos

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr is how the trial starts leaderrun: in its own process group,
// so that a Ctrl-C meant for the driver does not reach it (the driver stops
// it itself), and with a parent-death signal, so that it cannot outlive a
// driver or test binary that dies abruptly. The starting goroutine holds its
// OS thread for the process's life (golang/go#27505).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// runningExe reports whether pid is a live (not zombie) process running the
// executable exe. It guards the leftover check against pids reused by
// unrelated processes.
func runningExe(pid int, exe string) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
		if f := bytes.Fields(stat[i+1:]); len(f) > 0 && (string(f[0]) == "Z" || string(f[0]) == "X") {
			return false
		}
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
