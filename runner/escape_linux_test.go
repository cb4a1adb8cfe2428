package runner

// Ways the command's processes outlive a stop, or a stop never ends, with
// the guard as the child subreaper of the command's subtree: each test
// fails on this code.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// doneBound is how long Done may take once SIGKILL has gone out: killWait
// (the bounded wait for the processes to go) and a margin.
const doneBound = killWait + 5*time.Second

// TestKillWhileGroupStopped: the command's group was stopped with SIGSTOP
// (`kill -STOP -PGID`, or the command's own `kill -STOP 0`), guard included,
// which cannot catch it. A kill with no grace (a lost lease found past its
// kill deadline, a second SIGINT) sends SIGKILL to each process but the
// guard, and no SIGCONT: the guard stays stopped, never reports the
// command's end, and Done never closes. leaderrun hangs, holding the lease
// (an outside second SIGINT) or after losing it, and never records the end.
//
// The guard leaves the command's group once the command has started: a
// SIGSTOP to the group reaches it only in the instant before, so it is
// stopped by its pid too, as an operator's `kill -STOP` of it would.
func TestKillWhileGroupStopped(t *testing.T) {
	t.Parallel()
	r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=sleep")
	r.expect(t, "ready")
	pgid := r.p.Pid()
	// Runs before startChild's cleanup, which waits for Done.
	t.Cleanup(func() { _ = unix.Kill(-pgid, unix.SIGCONT); _ = unix.Kill(pgid, unix.SIGCONT) })
	if err := unix.Kill(-pgid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(pgid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the guard to be stopped", func() bool {
		s, err := readStat(pgid)
		return err == nil && s.state == 'T'
	})
	r.p.Stop(0)
	select {
	case <-r.p.Done():
	case <-time.After(doneBound):
		t.Fatalf("Done not closed %v after SIGKILL: the guard, stopped with its group, never reports the command's end", doneBound)
	}
}

// TestGuardKilledAloneEscapee: the guard dies alone (SIGKILL to it by pid,
// the OOM killer, or the command's own `kill -9 0`, which reaches the
// guard in its group) while a grandchild of the command runs in a session
// of its own. The command dies of its parent-death signal; the grandchild,
// the guard's adopted descendant, is reparented to init, where the walk
// from the guard (tree_linux.go) no longer finds it: Done closes, the
// lease is released, and it runs on.
func TestGuardKilledAloneEscapee(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "grand")
	r := startChild(t, Config{KillGrace: 300 * time.Millisecond}, "RUNNER_TEST_CHILD=fork",
		"RUNNER_TEST_ESCAPE=setsid", "RUNNER_TEST_PIDFILE="+pidfile, "RUNNER_TEST_IGNORE_TERM=1")
	r.expect(t, "ready")
	grand := readPid(t, pidfile)
	t.Cleanup(func() {
		if !gone(grand) {
			_ = unix.Kill(grand, unix.SIGKILL)
		}
	})
	if err := syscall.Kill(r.p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.wait(t)
	if !gone(grand) {
		s, _ := readStat(grand)
		t.Errorf("the grandchild %d (a session of its own) still runs after Done, its parent now %d", grand, s.ppid)
	}
}

// TestLeaderrunDiesAtTheGoAhead: leaderrun dies (kill -9, a crash) right
// after handing the guard its go-ahead, before the guard has started the
// command. The guard's lifeline watcher sees the end at once and kills the
// command's processes: none yet. Its bounded wait (awaitEmpty) finds none
// at its first look, 25 ms later, and closes released, which also ends the
// kill-deadline watcher (deadManSwitch). The guard then starts the command
// (guard.go: runCommand after the go-ahead, whatever the lifeline said),
// and nothing bounds it any more: it runs on with no leaderrun and no
// lease, for as long as it likes. A large environment stretches the guard's
// work between the go-ahead and the fork past those 25 ms; a starved host
// does the same with any environment. The same window lets the kill
// deadline pass and its watcher end before the fork.
func TestLeaderrunDiesAtTheGoAhead(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "cmd")
	pr := prepareChild(t, Config{KillGrace: time.Hour})
	// Up to Linux's 2 MiB for the arguments and environment: entries and
	// their pointers.
	env := append(testEnv(), "RUNNER_TEST_CHILD=grand", "RUNNER_TEST_PIDFILE="+pidfile)
	for i := range 90_000 {
		env = append(env, "P"+strconv.Itoa(i)+"=")
	}
	if err := pr.prep.SetKillDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	pr.launchEnv(t, env)
	pr.p.lifeline.Close() // leaderrun's end of the lifeline: as if it died now
	deadline := time.Now().Add(goneTime)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(pidfile)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		pid, _ := strconv.Atoi(string(b))
		t.Cleanup(func() {
			if !gone(pid) {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		})
		time.Sleep(goneTime)
		if !gone(pid) {
			t.Fatalf("the command (pid %d) started after leaderrun's end and still runs %v later: nothing bounds it", pid, goneTime)
		}
		return
	}
}

// pidHopper is a C program that never stays one process for long: it forks,
// the parent exits, the child does the same, a new pid every 200 µs or so,
// deaf to SIGTERM, in the command's group. It gives up after 20 s, so that
// a failed test cannot leave it behind for long.
const pidHopper = `
#include <signal.h>
#include <time.h>
#include <unistd.h>

int main(void) {
	time_t end = time(0) + 20;
	signal(SIGTERM, SIG_IGN);
	while (time(0) < end) {
		pid_t p = fork();
		if (p > 0) _exit(0);
		usleep(200);
	}
	return 0;
}
`

// TestPidHopperKilled: a process of the command's group that forks and
// exits without pause (the command itself here: its first process exits
// at once, a hop) is never the process a walk of /proc lists: the walk
// lists /proc, then reads each stat line, by which time the pid listed has
// gone and its successor was never listed. The walk (tree_linux.go) finds
// no running process, Done closes without a signal sent, and the lease
// would be released under it; a SIGKILL sent by pid would miss it the same
// way. kill(-pgid, 0) sees the group's member, and kill(-pgid, SIGKILL),
// which the kernel delivers to the whole group at once, forks in progress
// included, would end it; the guard's staying in the group rules both out.
func TestPidHopperKilled(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build the pid hopper")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "hop.c"), filepath.Join(dir, "hop")
	if err := os.WriteFile(src, []byte(pidHopper), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := combinedOutputOwn(exec.Command(gcc, "-o", bin, src)); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	r := startChild(t, Config{Argv: []string{bin}, KillGrace: 300 * time.Millisecond})
	pgid := r.p.Pid()
	// The group's kill ends the hopper whatever happens, the guard with it.
	t.Cleanup(func() { _ = unix.Kill(-pgid, unix.SIGKILL) })
	time.Sleep(200 * time.Millisecond) // hopping
	r.p.Stop(300 * time.Millisecond)
	select {
	case <-r.p.Done():
	case <-time.After(doneBound):
		t.Fatalf("Done not closed %v after the stop", doneBound)
	}
	time.Sleep(100 * time.Millisecond)
	// The guard has been dismissed: a member of the group now is the hopper.
	if err := unix.Kill(-pgid, 0); err == nil {
		t.Errorf("the command's group %d still has a process after Done", pgid)
	}
}

func init() {
	signalsByName["ABRT"] = syscall.SIGABRT
	signalsByName["SYS"] = syscall.SIGSYS
	signalsByName["TRAP"] = syscall.SIGTRAP
}

// TestStopSignalSparesTheGuard: --kill-signal takes any signal, and a stop
// signal other than SIGKILL goes to the command's process group, the guard
// included, which catches only guardSignals. SIGABRT, SIGSYS and SIGTRAP
// (a core dump on stop is a reason to choose SIGABRT) end a Go program
// with a stack dump: the guard dies, the command gets its parent-death
// SIGKILL at once instead of its grace, and what the guard had adopted
// goes to init (TestGuardKilledAloneEscapee).
func TestStopSignalSparesTheGuard(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"ABRT", "SYS", "TRAP"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := startChild(t, Config{StopSignal: signalsByName[name], KillGrace: 10 * time.Second},
				"RUNNER_TEST_CHILD=catch", "RUNNER_TEST_SIGNALS="+name, "RUNNER_TEST_EXIT_ON="+name)
			r.expect(t, "ready")
			r.p.Stop(10 * time.Second)
			if res := r.wait(t); res != (Result{}) {
				t.Errorf("Result = %+v, want the command's own exit 0 on SIG%s", res, name)
			}
		})
	}
}
