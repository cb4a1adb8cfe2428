package runner

// Reading processes from /proc: one process's stat line, every process's,
// and whether a process still has a thread that runs.

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
)

// procStat is what the runner reads of a process in /proc/PID/stat.
type procStat struct {
	pid, ppid, pgrp int
	state           byte   // R, S, D, T, Z, X...
	threads         int    // num_threads: live threads, a zombie leader included
	start           uint64 // starttime, in clock ticks since boot: with pid, it names one process
}

// running reports whether a thread of the process still runs. A zombie
// whose main thread exited (pthread_exit) while other threads work shows
// state Z, but counts them in num_threads: it is dead only when the zombie
// leader is all that is left.
func (s procStat) running() bool {
	if s.state == 'Z' || s.state == 'X' {
		return s.threads > 1
	}
	return true
}

// readStat reads /proc/PID/stat: "pid (comm) state ppid pgrp session tty
// tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
// priority nice num_threads itrealvalue starttime ...". comm may hold
// spaces and parentheses: the fields are counted from the last ')'.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(pid, b)
}

var errBadStat = errors.New("runner: malformed /proc stat line")

func parseStat(pid int, b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errBadStat
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errBadStat
	}
	s := procStat{pid: pid, state: f[0][0]}
	var errs [4]error
	s.ppid, errs[0] = strconv.Atoi(string(f[1]))
	s.pgrp, errs[1] = strconv.Atoi(string(f[2]))
	s.threads, errs[2] = strconv.Atoi(string(f[17]))
	s.start, errs[3] = strconv.ParseUint(string(f[19]), 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return procStat{}, errBadStat
	}
	return s, nil
}

// scanProcs reads every process's stat. Processes that vanish while it
// reads are left out.
func scanProcs() ([]procStat, error) {
	pids, err := listProcs()
	if err != nil {
		return nil, err
	}
	return readProcs(pids), nil
}

// listProcs lists the pids in /proc.
func listProcs() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// childrenOf lists the children of process pid, every thread's, from
// /proc/PID/task/TID/children (a kernel built without it lists none).
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// readProcs reads the stat of each of pids; those that have vanished are
// left out.
func readProcs(pids []int) []procStat {
	procs := make([]procStat, 0, len(pids))
	for _, pid := range pids {
		if s, err := readStat(pid); err == nil {
			procs = append(procs, s)
		}
	}
	return procs
}

// procUsable reports whether /proc shows this process under its own pid: a
// process in a pid namespace that did not mount its own /proc sees another
// namespace's pids there, and must not judge processes by them
// (/proc/self names the process by the pid of /proc's namespace).
var procUsable = sync.OnceValue(func() bool {
	self, err := os.Readlink("/proc/self")
	return err == nil && self == strconv.Itoa(os.Getpid())
})
