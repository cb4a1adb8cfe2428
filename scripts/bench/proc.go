package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/leaderrun/leaderrun/internal/chaos"
)

// proc is a process the bench started. It leads its own process group (so a
// Ctrl-C meant for the driver does not reach it, and a group signal reaches
// what it started without leaving the group), and has a parent-death signal,
// so that it cannot outlive a driver that dies abruptly.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done <-chan struct{} // closed when it has exited and been reaped
}

// launch starts argv with env, its output to logPath (appended), and
// registers it for the final cleanup.
func (b *bench) launch(name, logPath string, env, argv []string) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, b.work
	done, err := chaos.StartLogged(cmd, logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: done}
	b.mu.Lock()
	b.procs = append(b.procs, p)
	b.mu.Unlock()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process alone (os.Process uses a pidfd where it
// can, so a reused pid is never hit).
func (p *proc) signal(sig syscall.Signal) {
	if !p.exited() {
		_ = p.cmd.Process.Signal(sig)
	}
}

// signalGroup sends sig to the process group the bench created for it.
func (p *proc) signalGroup(sig syscall.Signal) {
	if !p.exited() {
		_ = unix.Kill(-p.pid(), sig)
	}
}

// wait waits up to d for the process to exit.
func (p *proc) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// stop sends SIGTERM, then SIGKILL to its group after grace, and reaps it.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	p.signal(syscall.SIGTERM)
	if p.wait(grace) {
		return
	}
	p.signalGroup(syscall.SIGKILL)
	p.signal(syscall.SIGKILL)
	<-p.done
}

// exitCode is the exit status, 128+N for a signal, -1 while running.
func (p *proc) exitCode() int {
	if !p.exited() {
		return -1
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return p.cmd.ProcessState.ExitCode()
}

// stopAll stops every process the bench started that is still running:
// SIGTERM to each, then SIGKILL to each one's group.
func (b *bench) stopAll() {
	b.mu.Lock()
	procs := append([]*proc(nil), b.procs...)
	b.mu.Unlock()
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range procs {
		if !p.wait(time.Until(deadline)) {
			p.signalGroup(syscall.SIGKILL)
			p.signal(syscall.SIGKILL)
			<-p.done
		}
	}
}

// timed runs argv to completion and returns how long it took, from just
// before the fork to just after the wait.
func timed(env []string, dir string, out *os.File, argv ...string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := time.Now()
	err := cmd.Run()
	return time.Since(t0), err
}

// waitFor polls cond every 10 ms until it holds, ctx ends or d passes.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return false
		}
		sleepCtx(ctx, 10*time.Millisecond)
	}
}

// sleepCtx sleeps d or until ctx ends; false if ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// logHas reports whether the file at path contains s.
func logHas(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte(s))
}

// logTail is the end of a log file, for error messages.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return "; log: " + strings.TrimSpace(string(b))
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
	f := statFields(pid)
	if len(f) < 13 {
		return 0
	}
	// After "pid (comm)": state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * tick
}

// statFields are the fields of /proc/PID/stat after "pid (comm)".
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// alive reports whether pid is a live (not zombie) process running exe.
func alive(pid int, exe string) bool {
	f := statFields(pid)
	if len(f) == 0 || f[0] == "Z" || f[0] == "X" {
		return false
	}
	link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	return strings.TrimSuffix(link, " (deleted)") == exe
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
		if f := statFields(n); len(f) > 1 && f[1] == strconv.Itoa(pid) {
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
	if alive(pid, exe) {
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
