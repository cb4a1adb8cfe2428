package runner

// Ways the command's processes outlive a stop, or a run never ends, with
// the guard out of the command's group and leaderrun a child subreaper:
// each test fails on this code.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// walkHopper is a process that leaves the command's session (the "fork"
// child starts it with setsid) and hops on cue: each SIGUSR1 makes it fork,
// the child write its pid to the file named by the last argument and wait
// for the next cue, the parent exit. Deaf to SIGTERM; it gives up after
// 30 s.
const walkHopper = `
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int writepid(const char *path) {
	char tmp[4096];
	FILE *f;
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if (!(f = fopen(tmp, "w"))) return -1;
	fprintf(f, "%d", (int)getpid());
	fclose(f);
	return rename(tmp, path);
}

int main(int argc, char **argv) {
	sigset_t usr1;
	struct timespec second = {1, 0};
	time_t end = time(0) + 30;
	if (argc < 2) return 1;
	signal(SIGTERM, SIG_IGN);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, 0);
	if (writepid(argv[argc-1]) != 0) return 1;
	while (time(0) < end) {
		if (sigtimedwait(&usr1, 0, &second) != SIGUSR1) continue;
		if (fork() != 0) _exit(0);
		if (writepid(argv[argc-1]) != 0) return 1;
	}
	return 0;
}
`

// TestHopperOutsideTheGroupKilled: a descendant of the command that leaves
// its group and session (setsid, as a daemon does) and forks and exits
// without pause (a respawn loop, a fork-per-task server, a process that
// re-forks to shed its parent: a new pid every few hundred microseconds)
// is caught by a walk of /proc only if the pid the walk listed still runs
// when the walk reads it: one hop between the listing and the read hides
// it, and its group is not the command's, the only one signalled as a
// whole. The walk's hook makes that hop happen in every walk, as a fast
// hopper's timing does by chance (free-running, a hop every 200 µs asked
// for, a few ms each on a loaded two-core machine, it outlived the stop in
// 2 runs of 5): every walk, the SIGKILL rounds'
// included, finds nothing running, two empty walks end the stop, Done
// closes and the lease would be released while the hopper runs on,
// reparented to the guard, then to leaderrun, then to init. Its session's
// group, which no walk signals as a whole, kill(-sid, SIGKILL), ends it at
// once. Not parallel: it sets testHookListed.
func TestHopperOutsideTheGroupKilled(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build the hopper")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "hop.c"), filepath.Join(dir, "hop")
	if err := os.WriteFile(src, []byte(walkHopper), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := combinedOutputOwn(exec.Command(gcc, "-o", bin, src)); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	pidfile := filepath.Join(dir, "hopper")
	current := func() int {
		b, err := os.ReadFile(pidfile)
		if err != nil {
			return 0
		}
		pid, _ := strconv.Atoi(string(b))
		return pid
	}
	var pgid atomic.Int64
	testHookListed = func(root int) {
		if int64(root) != pgid.Load() {
			return
		}
		// One hop between the listing and the reads.
		pid := current()
		if pid == 0 || unix.Kill(pid, unix.SIGUSR1) != nil {
			return
		}
		for end := time.Now().Add(goneTime); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if current() != pid && gone(pid) {
				return
			}
		}
	}
	t.Cleanup(func() { testHookListed = nil })
	r := startChild(t, Config{KillGrace: 300 * time.Millisecond}, "RUNNER_TEST_CHILD=fork",
		"RUNNER_TEST_ESCAPE=setsid", "RUNNER_TEST_ARGV="+bin, "RUNNER_TEST_PIDFILE="+pidfile)
	r.expect(t, "ready")
	sid := current()
	// The session's group as a whole: the hopper ends whatever happens.
	t.Cleanup(func() { _ = unix.Kill(-sid, unix.SIGKILL) })
	pgid.Store(int64(r.p.Pid()))
	r.p.Stop(300 * time.Millisecond)
	select {
	case <-r.p.Done():
	case <-time.After(doneBound):
		t.Fatalf("Done not closed %v after the stop", doneBound)
	}
	pgid.Store(0)
	if pid := current(); !gone(pid) {
		t.Errorf("the hopper (session %d, now pid %d) still runs after Done: the lease would be released under it", sid, pid)
	}
}

// TestStoppedGuardCommandExits: the guard is stopped by SIGSTOP, which it
// cannot catch (an operator's `kill -STOP` of its pid, or `pkill -STOP -f
// WORKER`, which matches the guard's command line too), and the command
// then exits by itself. The guard cannot report the end; leaderrun sends
// the guard SIGCONT only with a SIGKILL, which never comes: no stop is
// under way. Done never closes: leaderrun renews the lease for ever with
// nothing running, and no other host ever runs the command. (Were
// leaderrun killed meanwhile, the stopped guard would not kill anything
// either: the lifeline's end waits for a SIGCONT too.)
func TestStoppedGuardCommandExits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidfile, gofile := filepath.Join(dir, "cmd"), filepath.Join(dir, "go")
	r := startChild(t, Config{KillGrace: time.Second}, "RUNNER_TEST_CHILD=grand",
		"RUNNER_TEST_PIDFILE="+pidfile, "RUNNER_TEST_GO="+gofile)
	cmdPid := readPid(t, pidfile)
	guard := r.p.Pid()
	waitFor(t, "the guard to leave the command's group", func() bool {
		pg, err := unix.Getpgid(guard)
		return err == nil && pg != guard
	})
	// Runs before startChild's cleanup, which waits for Done.
	t.Cleanup(func() { _ = unix.Kill(guard, unix.SIGCONT) })
	if err := unix.Kill(guard, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the guard to be stopped", func() bool {
		s, err := readStat(guard)
		return err == nil && s.state == 'T'
	})
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "the command", cmdPid)
	const bound = 15 * time.Second
	select {
	case <-r.p.Done():
	case <-time.After(bound):
		t.Fatalf("Done not closed %v after the command exited by itself: the guard, stopped, never reports it, and leaderrun would hold the lease for ever", bound)
	}
}
