package exit

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// raiseEnv makes the test binary a process that ends by Raise of the
// signal number it holds, as leaderrun's Execute does, with a catch-all
// Notify first (leaderrun's run handles the signals it forwards) and core
// dumps allowed as far as the hard limit goes, so that a core would be
// written if Raise did not turn them off.
const raiseEnv = "LEADERRUN_TEST_RAISE"

func TestMain(m *testing.M) {
	if v := os.Getenv(raiseEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			os.Exit(99)
		}
		sig := syscall.Signal(n)
		var lim unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_CORE, &lim) == nil {
			lim.Cur = lim.Max
			_ = unix.Setrlimit(unix.RLIMIT_CORE, &lim)
		}
		if os.Getenv(raiseEnv+"_NOTIFY") != "" {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
		Raise(sig)
		os.Exit(SignalBase + n) // as Execute: the status where the signal did not end it
	}
	os.Exit(m.Run())
}

func TestRaise(t *testing.T) {
	for _, tc := range []struct {
		sig    syscall.Signal
		notify bool
		killed bool // ended by the signal; otherwise exit 128+N
	}{
		{syscall.SIGTERM, true, true},
		{syscall.SIGTERM, false, true},
		{syscall.SIGINT, true, true},
		{syscall.SIGHUP, true, true},
		{syscall.SIGPIPE, true, true},
		{syscall.SIGPIPE, false, true},
		{syscall.SIGQUIT, true, true},  // Go's own: a goroutine dump and exit 2
		{syscall.SIGQUIT, false, true}, // likewise
		{syscall.SIGABRT, true, true},  // Go's own: a dump, and a core with GOTRACEBACK=crash
		{syscall.SIGABRT, false, true},
		{syscall.SIGUSR1, true, true},
		{syscall.SIGSEGV, false, true},
		{syscall.SIGWINCH, true, false}, // ignored by default: nothing ends the process
		{syscall.SIGKILL, false, false}, // never raised: 137
	} {
		name := unix.SignalName(tc.sig)
		if tc.notify {
			name += "/notified"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), raiseEnv+"="+strconv.Itoa(int(tc.sig)))
			if tc.notify {
				cmd.Env = append(cmd.Env, raiseEnv+"_NOTIFY=1")
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			if err == nil {
				t.Fatal("the process exited 0")
			}
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ok {
				t.Fatalf("no wait status: %v", err)
			}
			switch {
			case tc.killed && (!ws.Signaled() || ws.Signal() != tc.sig):
				t.Fatalf("wait status %v (stderr %q), want killed by %s", cmd.ProcessState, stderr.String(), unix.SignalName(tc.sig))
			case !tc.killed && (ws.Signaled() || ws.ExitStatus() != SignalBase+int(tc.sig)):
				t.Fatalf("wait status %v, want exit status %d", cmd.ProcessState, SignalBase+int(tc.sig))
			case ws.CoreDump():
				t.Fatalf("wait status %v: a core was dumped", cmd.ProcessState)
			}
			if cores, _ := filepath.Glob(filepath.Join(dir, "core*")); len(cores) > 0 {
				t.Fatalf("core files left: %v", cores)
			}
			if s := stderr.String(); s != "" {
				t.Fatalf("stderr %q, want nothing (no goroutine dump)", s)
			}
		})
	}
}

// PID 1 of a PID namespace (a container's init) cannot die of a signal it
// sends itself: Raise returns, and the status is 128+N, as a shell would
// have seen it.
func TestRaiseAsPID1(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), raiseEnv+"="+strconv.Itoa(int(syscall.SIGTERM)), raiseEnv+"_NOTIFY=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	err := cmd.Run()
	if cmd.ProcessState == nil {
		t.Skipf("cannot start a process in a PID namespace of its own here: %v", err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() || ws.ExitStatus() != SignalBase+int(syscall.SIGTERM) {
		t.Fatalf("wait status %v, want exit status %d", cmd.ProcessState, SignalBase+int(syscall.SIGTERM))
	}
}
