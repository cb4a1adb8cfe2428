//go:build unix

package runner

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// Bounds are generous: the tests must hold on a busy two-core machine with
// the race detector, so they assert order and bounds, never speed.
const (
	within   = 30 * time.Second // for anything to happen
	goneTime = 5 * time.Second  // for a killed process to be gone
)

// run is a started test child: its Process, the lines it prints, its
// standard error and the runner's log.
type run struct {
	p      *Process
	lines  chan string
	stderr *os.File
	log    *lockedBuffer
}

// startChild starts the test binary as the command, in the child mode that
// env selects (see child in main_test.go), with cfg's other fields. Without
// env, cfg.Env is left as it is.
func startChild(t *testing.T, cfg Config, env ...string) *run {
	t.Helper()
	if cfg.Env == nil && len(env) > 0 {
		cfg.Env = append(testEnv(), env...)
	}
	r, started := newRun(t, &cfg)
	var err error
	r.p, err = Start(cfg)
	started(err)
	return r
}

// newRun sets cfg up for a test child (the test binary as the command unless
// cfg.Argv is set, its output to the run, /dev/null as its input unless
// cfg.Stdin is set, the runner's log to the run). started must be called
// with Start's or Prepare's error as soon as it returns; it fails the test on
// an error. Once r.p is set, the command's group is killed at cleanup.
func newRun(t *testing.T, cfg *Config) (r *run, started func(error)) {
	t.Helper()
	if cfg.Argv == nil {
		cfg.Argv = []string{testExe}
	}
	r = &run{lines: make(chan string, 100), log: &lockedBuffer{}}
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.stderr, err = os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Stdout, cfg.Stderr = w, r.stderr
	if cfg.Stdin == nil {
		cfg.Stdin, err = os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: r.log, Level: hclog.Debug})
	t.Cleanup(func() {
		if r.p != nil {
			r.p.Stop(0)
			select {
			case <-r.p.Done():
			case <-time.After(within):
				t.Errorf("cleanup: the group of %d did not go", r.p.Pid())
			}
		}
		if t.Failed() {
			t.Logf("runner log:\n%s", r.log.String())
		}
	})
	return r, func(err error) {
		t.Helper()
		w.Close()
		if err != nil {
			out.Close()
			t.Fatalf("start: %v", err)
		}
		go func() {
			defer out.Close()
			defer close(r.lines)
			s := bufio.NewScanner(out)
			s.Buffer(nil, 1<<20)
			for s.Scan() {
				r.lines <- s.Text()
			}
		}()
	}
}

// expect waits for the child to print want.
func (r *run) expect(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("the child's output ended before %q", want)
			}
			if line == want {
				return
			}
		case <-timeout:
			t.Fatalf("the child did not print %q", want)
		}
	}
}

// wait waits for Done and returns the Result.
func (r *run) wait(t *testing.T) Result {
	t.Helper()
	select {
	case <-r.p.Done():
		return r.p.Result()
	case <-time.After(within):
		t.Fatalf("Done was not closed within %v", within)
		return Result{}
	}
}

// running fails the test if Done is closed.
func (r *run) running(t *testing.T) {
	t.Helper()
	select {
	case <-r.p.Done():
		t.Fatalf("the command ended: %+v", r.p.Result())
	default:
	}
}

// rest returns the lines printed after those already read, once all
// writers have gone.
func (r *run) rest(t *testing.T) []string {
	t.Helper()
	var lines []string
	timeout := time.After(within)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				return lines
			}
			lines = append(lines, line)
		case <-timeout:
			t.Fatal("the child's output did not end")
		}
	}
}

func (r *run) stderrText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(r.stderr.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// gone reports whether pid has exited. A zombie counts as gone: it is dead,
// and a container's init may never reap it; but not one whose main thread
// exited while others still run (num_threads above 1).
func gone(pid int) bool {
	if errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) && runtimeHasProc()
	}
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+1:])
	return len(f) > 17 && (string(f[0]) == "Z" || string(f[0]) == "X") && string(f[17]) == "1"
}

func runtimeHasProc() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(goneTime)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs %v later", what, pid, goneTime)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readPid waits for path to hold a pid.
func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunGuardOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"leaderrun"}, {"leaderrun", "run"}, {"leaderrun", "--", guardArg}} {
		if code, ok := RunGuard(args); ok || code != 0 {
			t.Errorf("RunGuard(%q) = %d, %v; want 0, false", args, code, ok)
		}
	}
}

func TestGuardRefusesToRunByHand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		why  string
	}{
		// Started by hand the guard is not a group leader: it must not take
		// the caller's group for its own.
		{"not a group leader", []string{guardProtocol, "/bin/true", "--", "true"}, "not a process group leader"},
		// A leaderrun of an older version, which would not send the go-ahead.
		{"other protocol", []string{"/bin/true", "--", "true"}, "another version"},
		{"malformed", []string{guardProtocol, "/bin/true", "true"}, "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(testExe, append([]string{guardArg}, tt.args...)...)
			cmd.Env = testEnv()
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: tt.name != "not a group leader"}
			out, err := combinedOutputOwn(cmd)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != guardFailed {
				t.Fatalf("err = %v, want exit status %d", err, guardFailed)
			}
			if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], tt.why) {
				t.Errorf("want a one-line message about %q, got %q", tt.why, out)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 3, 255} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			r := startChild(t, Config{}, "RUNNER_TEST_CHILD=exit", "RUNNER_TEST_CODE="+strconv.Itoa(code))
			res := r.wait(t)
			if res != (Result{ExitCode: code}) || res.Code() != code {
				t.Errorf("Result = %+v (Code %d), want exit code %d", res, res.Code(), code)
			}
			if s := r.stderrText(t); s != "" {
				t.Errorf("something printed on stderr: %q", s)
			}
		})
	}
}

func TestExecErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		argv []string
		code int
		err  error
	}{
		{"not on PATH", []string{"leaderrun-test-no-such-command"}, 127, exec.ErrNotFound},
		{"no such file", []string{filepath.Join(dir, "missing")}, 127, fs.ErrNotExist},
		{"not executable", []string{plain}, 126, fs.ErrPermission},
		{"directory", []string{dir}, 126, syscall.EISDIR},
	}
	starters := []struct {
		name  string
		start func(Config) error
	}{
		{"Start", func(cfg Config) error {
			p, err := Start(cfg)
			if err == nil {
				p.Stop(0)
				<-p.Done()
			}
			return err
		}},
		{"Prepare", func(cfg Config) error {
			p, err := Prepare(cfg)
			if err == nil {
				p.Discard()
			}
			return err
		}},
	}
	for _, st := range starters {
		for _, tt := range tests {
			t.Run(st.name+"/"+tt.name, func(t *testing.T) {
				err := st.start(Config{Argv: tt.argv})
				if err == nil {
					t.Fatal(st.name + " succeeded")
				}
				var ee *ExecError
				if !errors.As(err, &ee) {
					t.Fatalf("err = %v (%T), want *ExecError", err, err)
				}
				if ee.Code != tt.code || ee.Path != tt.argv[0] || !errors.Is(err, tt.err) {
					t.Errorf("err = %#v, want code %d, path %q, wrapping %v", ee, tt.code, tt.argv[0], tt.err)
				}
				if !strings.HasPrefix(err.Error(), "runner: ") {
					t.Errorf("message %q lacks the package name", err)
				}
			})
		}
		if err := st.start(Config{}); !errors.Is(err, ErrNoCommand) {
			t.Errorf("%s with no command: %v, want ErrNoCommand", st.name, err)
		}
	}
}

// An executable file that execve refuses is only found out in the guard,
// which reports it as 126 with one line on stderr. Not parallel: writing an
// executable while other tests fork risks ETXTBSY (golang/go#22315).
func TestExecFormatError(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := startChild(t, Config{Argv: []string{bad}})
	if res := r.wait(t); res != (Result{ExitCode: 126}) {
		t.Errorf("Result = %+v, want exit code 126", res)
	}
	s := r.stderrText(t)
	if strings.Count(s, "\n") != 1 || !strings.Contains(s, bad) {
		t.Errorf("stderr = %q, want one line naming %s", s, bad)
	}
}

func TestEnv(t *testing.T) {
	t.Run("given", func(t *testing.T) {
		r := startChild(t, Config{}, "RUNNER_TEST_CHILD=env", "RUNNER_TEST_VAR=LEADERRUN_TEST_X", "LEADERRUN_TEST_X=a b=c")
		r.expect(t, "a b=c")
		if res := r.wait(t); res.Code() != 0 {
			t.Errorf("Result = %+v", res)
		}
	})
	t.Run("nil is leaderrun's", func(t *testing.T) {
		t.Setenv("RUNNER_TEST_CHILD", "env")
		t.Setenv("RUNNER_TEST_VAR", "LEADERRUN_TEST_Y")
		t.Setenv("LEADERRUN_TEST_Y", "inherited")
		t.Setenv("GORACE", "atexit_sleep_ms=0")
		r := startChild(t, Config{})
		r.expect(t, "inherited")
		if res := r.wait(t); res.Code() != 0 {
			t.Errorf("Result = %+v", res)
		}
	})
}
