package runner

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// escapes are the ways a descendant of the command leaves its process
// group (see the "fork" child): every stop must reach it all the same.
var escapes = []string{"setsid", "group", "daemon"}

// TestEscapeesStopped runs a command whose grandchild has left its process
// group, and stops it every way there is: each time the grandchild must be
// dead before Done.
func TestEscapeesStopped(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	stops := []struct {
		name       string
		then       string // the command: "exit" at once, or "" to run on
		ignoreTerm bool   // the grandchild ignores the stop signal
		stop       func(r *run)
		want       syscall.Signal // how the command ends; 0: exits 0
	}{
		{"lost lease: Stop", "", true, func(r *run) { r.p.Stop(grace) }, syscall.SIGTERM},
		{"outside SIGTERM", "", false, func(r *run) { r.p.HandleSignal(syscall.SIGTERM) }, syscall.SIGTERM},
		{"outside SIGTERM, deaf grandchild", "", true, func(r *run) { r.p.HandleSignal(syscall.SIGTERM) }, syscall.SIGTERM},
		{"second SIGINT", "", true, func(r *run) { r.p.HandleSignal(syscall.SIGINT); r.p.HandleSignal(syscall.SIGINT) }, syscall.SIGINT},
		{"command exits", "exit", true, func(*run) {}, 0},
		{"kill deadline", "", true, func(r *run) {
			if err := r.p.SetKillDeadline(time.Now().Add(grace)); err != nil {
				panic(err)
			}
		}, syscall.SIGKILL},
	}
	for _, escape := range escapes {
		for _, st := range stops {
			t.Run(escape+"/"+st.name, func(t *testing.T) {
				t.Parallel()
				pidfile := filepath.Join(t.TempDir(), "grand")
				env := []string{"RUNNER_TEST_CHILD=fork", "RUNNER_TEST_ESCAPE=" + escape,
					"RUNNER_TEST_PIDFILE=" + pidfile, "RUNNER_TEST_THEN=" + st.then}
				if st.ignoreTerm {
					env = append(env, "RUNNER_TEST_IGNORE_TERM=1")
				}
				r := startChild(t, Config{KillGrace: grace}, env...)
				r.expect(t, "ready")
				grand := readPid(t, pidfile)
				if pg, err := unix.Getpgid(grand); err != nil || pg == r.p.Pid() {
					t.Fatalf("the grandchild %d is in group %d (%v): it did not leave the command's", grand, pg, err)
				}
				st.stop(r)
				res := r.wait(t)
				if !gone(grand) {
					t.Errorf("the grandchild %d (escaped: %s) still runs after Done", grand, escape)
				}
				if res.Signal != st.want {
					t.Errorf("Result = %+v, want the command ended by %v", res, st.want)
				}
			})
		}
	}
}

// TestLeaderrunKilledEscapees kills a process that plays leaderrun with
// SIGKILL while its command's grandchild has left the command's group: the
// guard must kill it all the same.
func TestLeaderrunKilledEscapees(t *testing.T) {
	t.Parallel()
	for _, escape := range escapes {
		t.Run(escape, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			helper, stderr := startHelper(t, "RUNNER_TEST_CHILD=parent", "RUNNER_TEST_DIR="+dir,
				"RUNNER_TEST_ESCAPE="+escape, "RUNNER_TEST_IGNORE_TERM=1", "RUNNER_TEST_GRACE=1h")
			// Not read: the escapee keeps a copy of the pipe.
			defer stderr.Close()
			guard := readPid(t, filepath.Join(dir, "guard"))
			grand := readPid(t, filepath.Join(dir, "grand"))
			if gone(grand) {
				t.Fatal("the grandchild is gone before the helper is killed")
			}
			if err := helper.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = helper.Wait()
			waitGone(t, "grandchild", grand)
			waitGone(t, "guard", guard)
		})
	}
}

// TestLeaderrunJobKilled kills the whole process group of a process that
// plays leaderrun with SIGKILL, as a shell's `kill -9 %1` or timeout(1)
// does: the guard, in a group of its own, survives it and kills all of the
// command's processes, an escapee included.
func TestLeaderrunJobKilled(t *testing.T) {
	t.Parallel()
	for _, escape := range []string{"", "setsid"} {
		t.Run(cmpOr(escape, "in the group"), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			helper := exec.Command(testExe)
			helper.Env = append(testEnv(), "RUNNER_TEST_CHILD=parent", "RUNNER_TEST_DIR="+dir,
				"RUNNER_TEST_ESCAPE="+escape, "RUNNER_TEST_IGNORE_TERM=1", "RUNNER_TEST_GRACE=1h")
			helper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			own, err := startOwn(helper)
			if err != nil {
				t.Fatal(err)
			}
			job := helper.Process.Pid
			t.Cleanup(func() { _ = unix.Kill(-job, unix.SIGKILL); _ = own.Wait() })
			guard := readPid(t, filepath.Join(dir, "guard"))
			cmd := readPid(t, filepath.Join(dir, "cmd"))
			grand := readPid(t, filepath.Join(dir, "grand"))
			if err := unix.Kill(-job, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = own.Wait()
			waitGone(t, "grandchild", grand)
			waitGone(t, "command", cmd)
			waitGone(t, "guard", guard)
		})
	}
}

// TestOrphansAdoptedAndReaped: an orphan of the command (a double fork) is
// reparented to the guard, not to init, and reaped by it when it exits,
// while the command's own exit status still reaches leaderrun.
func TestOrphansAdoptedAndReaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidfile, goFile := filepath.Join(dir, "grand"), filepath.Join(dir, "go")
	r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=fork", "RUNNER_TEST_ESCAPE=daemon",
		"RUNNER_TEST_PIDFILE="+pidfile, "RUNNER_TEST_GO="+goFile, "RUNNER_TEST_THEN=exit", "RUNNER_TEST_CODE=7")
	r.expect(t, "ready")
	orphan := readPid(t, pidfile)
	waitFor(t, "the orphan to be reparented to the guard", func() bool {
		s, err := readStat(orphan)
		return err == nil && s.ppid == r.p.Pid()
	})
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the orphan to be reaped", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(orphan))
		return os.IsNotExist(err)
	})
	if res := r.wait(t); res != (Result{ExitCode: 7}) {
		t.Errorf("Result = %+v, want the command's own exit 7", res)
	}
}

// TestTreeMembers picks the command's processes out of one walk of /proc:
// the group's members, the guard's descendants and, once the guard has
// died, what leaderrun adopted (not its own children); a process whose
// parent the walk missed (it exited and was reaped while the walk read
// others, after the process was reparented) is read again.
func TestTreeMembers(t *testing.T) {
	t.Parallel()
	const (
		root = 100 // the guard; the command's group
		l    = 50  // leaderrun
	)
	p := func(pid, ppid, pgrp int) procStat {
		return procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: 'S', threads: 1, start: uint64(pid)}
	}
	walk := []procStat{
		p(1, 0, 1), p(l, 1, l), p(root, l, l), p(60, l, 60), // init, leaderrun, the guard, a health check's shell
		p(101, root, root), p(102, 101, 102), // the command, a grandchild in a session of its own
		p(103, 55, 103),                  // read before its parent 55, which exited and was reaped before it was read
		p(104, 1, root),                  // a member of the group elsewhere (init's: its reaper was not the guard)
		p(200, 1, 200), p(201, 200, 200), // another service
		p(300, l, 300), p(301, 300, 300), // adopted by leaderrun: once the guard has died, the command's
		p(61, 60, 60),    // the health check's
		p(400, 399, 400), // its parent missing too, but not reparented since (another namespace's, say)
		p(500, 499, 500), // read again, it is another process: a reused pid
	}
	again := map[int]procStat{
		103: p(103, root, 103),
		400: p(400, 399, 400),
		500: {pid: 500, ppid: root, pgrp: 500, state: 'S', threads: 1, start: 9999},
	}
	reread := func(pid int) (procStat, error) {
		if s, ok := again[pid]; ok {
			return s, nil
		}
		return procStat{}, fs.ErrNotExist
	}
	own := func(pid int) bool { return pid == root || pid == 60 }
	pids := func(procs []procStat) []int {
		var out []int
		for _, p := range procs {
			out = append(out, p.pid)
		}
		return out
	}
	for _, tt := range []struct {
		name    string
		adopter int
		want    []int
	}{
		{"guard alive", 0, []int{101, 102, 103, 104}},
		{"guard dead", l, []int{101, 102, 103, 104, 300, 301}},
	} {
		got := pids(treeMembers(root, slices.Clone(walk), tt.adopter, own, reread))
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: members %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestDaemonDuringWalk: a process of the command outside its group forks
// and exits (the middle of a double fork) after a walk of /proc has listed
// the processes and before it reads that one: the walk finds it gone and
// never lists its child, and finds nothing running. One empty walk must not
// end the wait for the command's processes: the next lists the child, which
// must be stopped. Not parallel: it sets testHookListed.
func TestDaemonDuringWalk(t *testing.T) {
	dir := t.TempDir()
	hop, daemon, goFile := filepath.Join(dir, "hop"), filepath.Join(dir, "daemon"), filepath.Join(dir, "go")
	var once sync.Once
	testHookListed = func(int) {
		// The first walk is the one that looks for what the command left.
		once.Do(func() {
			h, err := os.ReadFile(hop)
			if err != nil {
				return
			}
			pid, _ := strconv.Atoi(string(h))
			if err := os.WriteFile(goFile, nil, 0o644); err != nil {
				return
			}
			for end := time.Now().Add(within); time.Now().Before(end) && !gone(pid); {
				time.Sleep(time.Millisecond)
			}
		})
	}
	t.Cleanup(func() { testHookListed = nil })
	r := startChild(t, Config{KillGrace: 300 * time.Millisecond}, "RUNNER_TEST_CHILD=fork", "RUNNER_TEST_ESCAPE=setsid",
		"RUNNER_TEST_GRAND=hop", "RUNNER_TEST_PIDFILE="+hop, "RUNNER_TEST_HOP_PIDFILE="+daemon, "RUNNER_TEST_GO="+goFile,
		"RUNNER_TEST_IGNORE_TERM=1", "RUNNER_TEST_THEN=exit")
	r.expect(t, "ready")
	r.wait(t)
	d := readPid(t, daemon)
	t.Cleanup(func() {
		if !gone(d) {
			_ = unix.Kill(d, unix.SIGKILL)
		}
	})
	if !gone(d) {
		t.Errorf("the daemon %d, started during a walk, still runs after Done", d)
	}
}

// waitFor polls cond until it holds, or fails the test after within.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// threadedZombie is a C program whose main thread exits (pthread_exit)
// while another thread runs on, deaf to SIGTERM: /proc shows it as a
// zombie, alive all the same. It writes its pid to the file named by its
// last argument.
const threadedZombie = `
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static void *work(void *arg) { for (;;) pause(); return arg; }

int main(int argc, char **argv) {
	char tmp[4096];
	pthread_t t;
	FILE *f;
	signal(SIGTERM, SIG_IGN);
	if (argc < 2 || pthread_create(&t, 0, work, 0) != 0) return 1;
	snprintf(tmp, sizeof tmp, "%s.tmp", argv[argc-1]);
	if (!(f = fopen(tmp, "w"))) return 1;
	fprintf(f, "%d", (int)getpid());
	fclose(f);
	if (rename(tmp, argv[argc-1]) != 0) return 1;
	pthread_exit(0);
}
`

// buildThreadedZombie compiles threadedZombie with gcc, or skips (fails
// under CI) when there is no gcc.
func buildThreadedZombie(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no gcc to build the threaded zombie")
		}
		t.Skip("no gcc to build the threaded zombie")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "zombie.c"), filepath.Join(dir, "zombie")
	if err := os.WriteFile(src, []byte(threadedZombie), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := combinedOutputOwn(exec.Command(gcc, "-pthread", "-o", bin, src)); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// TestThreadedZombieIsAlive: a leftover whose main thread has exited shows
// as a zombie while its other threads run. It must count as running: Done
// waits for it, and SIGKILL ends it after the grace when it ignores the stop
// signal, whether the command exited by itself or on a lost lease's stop.
func TestThreadedZombieIsAlive(t *testing.T) {
	bin := buildThreadedZombie(t)
	t.Parallel()
	const grace = 300 * time.Millisecond
	for _, tt := range []struct {
		name, then string
		stop       bool
	}{
		{"command exits", "exit", false},
		{"lost lease", "", true},
	} {
		for _, escape := range []string{"", "setsid"} {
			t.Run(tt.name+"/"+cmpOr(escape, "in the group"), func(t *testing.T) {
				t.Parallel()
				pidfile := filepath.Join(t.TempDir(), "zombie")
				r := startChild(t, Config{KillGrace: grace}, "RUNNER_TEST_CHILD=fork", "RUNNER_TEST_ARGV="+bin,
					"RUNNER_TEST_ESCAPE="+escape, "RUNNER_TEST_PIDFILE="+pidfile, "RUNNER_TEST_THEN="+tt.then)
				r.expect(t, "ready")
				z := readPid(t, pidfile)
				t.Cleanup(func() { // deaf to SIGTERM: never left behind, even by a failure
					if !gone(z) {
						_ = unix.Kill(z, unix.SIGKILL)
					}
				})
				waitFor(t, "the zombie's main thread to exit", func() bool {
					s, err := readStat(z)
					return err == nil && s.state == 'Z'
				})
				if gone(z) {
					t.Fatalf("%d has no thread left before the stop", z)
				}
				if tt.stop {
					r.p.Stop(grace)
				}
				r.wait(t)
				if !gone(z) {
					t.Errorf("%d (a zombie leader with a running thread) still runs after Done", z)
				}
				if log := r.log.String(); tt.then == "exit" && !strings.Contains(log, "sigkill=true") {
					t.Errorf("the leftover was not SIGKILLed:\n%s", log)
				}
			})
		}
	}
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

func TestProcStatRunning(t *testing.T) {
	t.Parallel()
	const rest = " 1 29681 12127 0 -1 4227084 136 0 2 0 0 1 0 0 20 0 %s 0 65806 0 0"
	tests := []struct {
		line    string
		running bool
		threads int
	}{
		{"29699 (z) S" + strings.Replace(rest, "%s", "1", 1), true, 1},
		{"29699 (z) Z" + strings.Replace(rest, "%s", "2", 1), true, 2},
		{"29699 (z) Z" + strings.Replace(rest, "%s", "1", 1), false, 1},
		{"29699 (a) (b)) X" + strings.Replace(rest, "%s", "1", 1), false, 1},
	}
	for _, tt := range tests {
		s, err := parseStat(29699, []byte(tt.line))
		if err != nil {
			t.Fatalf("parseStat(%q): %v", tt.line, err)
		}
		if s.running() != tt.running || s.threads != tt.threads || s.ppid != 1 || s.pgrp != 29681 || s.start != 65806 {
			t.Errorf("parseStat(%q) = %+v, running %v; want running %v", tt.line, s, s.running(), tt.running)
		}
	}
	if _, err := parseStat(1, []byte("1 (x) S 0 1")); err == nil {
		t.Error("a short stat line was accepted")
	}
}

// TestJobControlSignalsDoNotStopGuard sends the terminal's job-control
// signals to the command's group, as Ctrl-Z does: the command handles them
// and exits, and the guard, which they reach too, must not be stopped by
// them, or the command's exit would never be reported. The command keeps
// their default dispositions.
func TestJobControlSignalsDoNotStopGuard(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"TSTP", "TTIN", "TTOU"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sig := signalsByName[name]
			r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=catch",
				"RUNNER_TEST_SIGNALS="+name, "RUNNER_TEST_EXIT_ON="+name)
			t.Cleanup(func() { _ = unix.Kill(r.p.Pid(), unix.SIGCONT) }) // a stopped guard, on failure
			r.expect(t, "ready")
			if err := unix.Kill(-r.p.Pid(), sig); err != nil {
				t.Fatal(err)
			}
			r.expect(t, sig.String())
			select {
			case <-r.p.Done():
			case <-time.After(10 * time.Second):
				s, _ := readStat(r.p.Pid())
				t.Fatalf("the command's exit was not reported (the guard's state: %c)", s.state)
			}
			if res := r.p.Result(); res != (Result{}) {
				t.Errorf("Result = %+v, want exit 0", res)
			}
		})
	}
	t.Run("defaults for the command", func(t *testing.T) {
		t.Parallel()
		r := startChild(t, Config{}, "RUNNER_TEST_CHILD=sigign")
		var ignored []string
		for line := range r.lines {
			if line == "end" {
				break
			}
			ignored = append(ignored, line)
		}
		// The guard catches every signal, and the command inherits none of
		// that: only what leaderrun itself ignores.
		for sig := syscall.Signal(1); sig < 32; sig++ {
			for _, got := range ignored {
				if got == sig.String() && !signal.Ignored(sig) {
					t.Errorf("the command inherited %v ignored", sig)
				}
			}
		}
		r.wait(t)
	})
}

// TestSetKillDeadlineNeverBlocks stops the guard so that it reads nothing,
// then sends more kill deadlines than its lifeline holds: SetKillDeadline
// must return every time, and Stop must not wait behind it.
func TestSetKillDeadlineNeverBlocks(t *testing.T) {
	t.Parallel()
	r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=sleep")
	r.expect(t, "ready")
	guard := r.p.Pid()
	if err := unix.Kill(guard, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer unix.Kill(guard, unix.SIGCONT)
	sent := make(chan error, 1)
	go func() {
		for range 20000 { // 160 KB: more than a pipe holds
			if err := r.p.SetKillDeadline(time.Now().Add(time.Hour)); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(within):
		t.Fatal("SetKillDeadline blocked on a full lifeline")
	}
	stopped := make(chan struct{})
	go func() { r.p.Stop(0); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(within):
		t.Fatal("Stop blocked")
	}
	if err := unix.Kill(guard, unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if res := r.wait(t); res.Signal != syscall.SIGKILL {
		t.Errorf("Result = %+v, want killed by SIGKILL", res)
	}
}

// TestPID1ReapsOrphans runs a helper as PID 1 of a pid namespace of its own
// (unshare, as root): the orphans its health checks leave behind are
// reparented to it and must be reaped, while each check's own result stays
// the check's.
func TestPID1ReapsOrphans(t *testing.T) {
	t.Parallel()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1)")
	}
	cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", testExe)
	cmd.Env = append(testEnv(), "RUNNER_TEST_CHILD=pid1")
	out, err := combinedOutputOwn(cmd)
	if strings.Contains(string(out), "unshare:") {
		if os.Getenv("CI") != "" && os.Geteuid() == 0 {
			t.Fatalf("unshare: %s", out)
		}
		t.Skipf("no pid namespace here: %s", strings.TrimSpace(string(out)))
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err != nil || len(lines) < 2 || lines[0] != "passed 5" || lines[len(lines)-1] != "clean" {
		t.Fatalf("as PID 1: %v\n%s", err, out)
	}
}

// TestKillResumesStoppedGuard: a guard stopped by SIGSTOP (which it cannot
// catch) is sent SIGCONT with the SIGKILL, and so reports the command's end
// itself: it is not the guard killed, a few seconds later, for not
// reporting.
func TestKillResumesStoppedGuard(t *testing.T) {
	t.Parallel()
	r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=sleep")
	r.expect(t, "ready")
	guard := r.p.Pid()
	t.Cleanup(func() { _ = syscall.Kill(guard, syscall.SIGCONT) })
	if err := syscall.Kill(guard, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the guard to be stopped", func() bool {
		s, err := readStat(guard)
		return err == nil && s.state == 'T'
	})
	r.p.Stop(0)
	if res := r.wait(t); res != (Result{ExitCode: -1, Signal: syscall.SIGKILL}) {
		t.Errorf("Result = %+v, want the command killed by SIGKILL", res)
	}
	if log := r.log.String(); strings.Contains(log, "has not reported") {
		t.Errorf("the guard was killed for not reporting, not resumed:\n%s", log)
	}
}
