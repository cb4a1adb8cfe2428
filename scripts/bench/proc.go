package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
	"github.com/leaderrun/leaderrun/runner/pdeath"
)

// launch starts argv with env, its output to logPath (appended), and
// registers it for the final cleanup. See testenv.StartLogged: its own
// process group, and a parent-death signal.
func (b *bench) launch(name, logPath string, env, argv []string) (*testenv.Process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, b.work
	p, err := testenv.StartLogged(name, cmd, logPath)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.procs = append(b.procs, p)
	b.mu.Unlock()
	return p, nil
}

// stopAll stops every process the bench started that is still running:
// SIGTERM to each, then SIGKILL to each one's group.
func (b *bench) stopAll() {
	b.mu.Lock()
	procs := append([]*testenv.Process(nil), b.procs...)
	b.mu.Unlock()
	for _, p := range procs {
		_ = p.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range procs {
		if !p.Wait(time.Until(deadline)) {
			p.Kill()
		}
	}
}

// timed runs argv to completion, with a parent-death signal, and returns
// how long it took, from just before the start to just after the wait.
func timed(env []string, dir string, out *os.File, argv ...string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, out, out
	t0 := time.Now()
	done, err := pdeath.Start(cmd)
	if err != nil {
		return time.Since(t0), err
	}
	<-done
	d := time.Since(t0)
	if !cmd.ProcessState.Success() {
		return d, &exec.ExitError{ProcessState: cmd.ProcessState}
	}
	return d, nil
}

// waitFor polls cond every 10 ms until it holds, ctx ends or d passes.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	return testenv.WaitUntil(ctx, time.Now().Add(d), 10*time.Millisecond, cond)
}

// procStat is what /proc says about a process's memory and CPU.
type procStat struct {
	HWM, RSS, PSS int64 // kB: peak resident set, resident set, proportional set
	CPU           time.Duration
	ok            bool
}

// readProcStat reads /proc/PID/status (VmHWM, VmRSS), smaps_rollup (Pss)
// and stat (utime + stime, in clock ticks).
func readProcStat(pid int, tick time.Duration) procStat {
	var s procStat
	dir := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return s
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "VmHWM":
			s.HWM = kB(v)
		case "VmRSS":
			s.RSS = kB(v)
		}
	}
	if rollup, err := os.ReadFile(dir + "/smaps_rollup"); err == nil {
		for line := range strings.SplitSeq(string(rollup), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == "Pss" {
				s.PSS = kB(v)
			}
		}
	}
	s.CPU = cpuTime(pid, tick)
	s.ok = true
	return s
}

func kB(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
	return n
}

// cpuTime is utime + stime of pid from /proc/PID/stat.
func cpuTime(pid int, tick time.Duration) time.Duration {
	f := testenv.StatFields(pid)
	if len(f) < 13 {
		return 0
	}
	// After "pid (comm)": state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * tick
}

// childrenOf lists the pids whose parent is pid.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := testenv.StatFields(n); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

// guardOf finds the guard process of a leading leaderrun: its child whose
// command line holds the guard's switch.
func guardOf(pid int) (int, error) {
	for _, c := range childrenOf(pid) {
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(c) + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte("__leaderrun-guard")) {
			return c, nil
		}
	}
	return 0, errors.New("no guard process found")
}

// killPID sends SIGKILL to pid if it still runs exe (a leftover the bench
// caused, such as an etcdctl child orphaned by kill -9).
func killPID(pid int, exe string) {
	if testenv.RunningExe(pid, exe) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// clockTick is the length of a /proc clock tick (getconf CLK_TCK; 100 Hz if
// that cannot be run).
func clockTick() time.Duration {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && n > 0 {
			return time.Second / time.Duration(n)
		}
	}
	return 10 * time.Millisecond
}

// absPath resolves exe to an absolute path with symlinks resolved, as
// /proc/PID/exe shows it.
func absPath(exe string) string {
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
	}
	return exe
}

// cpuPrecise is the CPU time of pid's live threads, in nanoseconds, from
// /proc/PID/task/*/schedstat (the first field: time spent on a CPU); it
// falls back to the clock-tick count of /proc/PID/stat. Threads that have
// exited are not counted: take differences over a window in which the
// process keeps its threads (a Go process in a steady state does).
func cpuPrecise(pid int, tick time.Duration) time.Duration {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return cpuTime(pid, tick)
	}
	var total int64
	for _, e := range entries {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return cpuTime(pid, tick)
		}
		total += n
	}
	return time.Duration(total)
}
