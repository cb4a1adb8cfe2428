//go:build unix

package runner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// prepRun is a prepared test child; its run's Process is set by launch.
type prepRun struct {
	*run
	prep *Prepared
}

// prepareChild prepares cfg's command (the test binary unless cfg.Argv is
// set) with the output plumbing of startChild. It is discarded at cleanup
// unless launched.
func prepareChild(t *testing.T, cfg Config) *prepRun {
	t.Helper()
	r, started := newRun(t, &cfg)
	prep, err := Prepare(cfg)
	started(err)
	t.Cleanup(prep.Discard)
	return &prepRun{run: r, prep: prep}
}

// launch launches the prepared command with the test environment plus env.
func (pr *prepRun) launch(t *testing.T, env ...string) {
	t.Helper()
	pr.launchEnv(t, append(testEnv(), env...))
}

func (pr *prepRun) launchEnv(t *testing.T, env []string) {
	t.Helper()
	p, err := pr.prep.Launch(env)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	pr.p = p
}

// reaped reports whether pid is gone without even a zombie left: as the
// parent, the test sees ESRCH only once the pid has been reaped.
func reaped(pid int) bool {
	return errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}

func noFile(t *testing.T, path, why string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %s exists (%v)", why, filepath.Base(path), err)
	}
}

// The command gets exactly the environment given to Launch: neither
// Config.Env nor what the guard inherited from leaderrun.
func TestPrepareLaunchEnv(t *testing.T) {
	t.Setenv("LEADERRUN_TEST_LEADERRUN_ONLY", "leaked")
	env := []string{
		"RUNNER_TEST_CHILD=environ",
		"GORACE=atexit_sleep_ms=0",
		"LEADERRUN_TEST_EQUALS=a=b==c=",
		"LEADERRUN_TEST_NEWLINES=\none\ntwo\n",
		"LEADERRUN_TEST_EMPTY=",
		"LEADERRUN_TEST_SPACES= x  y ",
		"LEADERRUN_TEST_BYTES=\x01\xff\t\r",
		// Larger than a pipe's buffer, smaller than Linux's limit for one
		// string (128 KiB).
		"LEADERRUN_TEST_BIG=" + strings.Repeat("0123456789", 10<<10),
	}
	pr := prepareChild(t, Config{Env: []string{"LEADERRUN_TEST_CONFIG_ENV=ignored"}})
	pr.launchEnv(t, env)
	var got []string
	timeout := time.After(within)
read:
	for {
		select {
		case line, ok := <-pr.lines:
			if !ok {
				t.Fatal("the child's output ended before \"end\"")
			}
			if line == "end" {
				break read
			}
			kv, err := strconv.Unquote(line)
			if err != nil {
				t.Fatalf("%.100q: %v", line, err)
			}
			got = append(got, kv)
		case <-timeout:
			t.Fatal("the child did not print its environment")
		}
	}
	if !slices.Equal(got, env) {
		t.Errorf("the command's environment:\n got %.200q\nwant %.200q", got, env)
	}
	if res := pr.wait(t); res.Code() != 0 {
		t.Errorf("Result = %+v", res)
	}
}

func TestPrepareDiscard(t *testing.T) {
	t.Parallel()
	ran := filepath.Join(t.TempDir(), "ran")
	prep, err := Prepare(Config{Argv: []string{testExe, touchArg, ran}})
	if err != nil {
		t.Fatal(err)
	}
	guard := prep.proc.pgid
	if reaped(guard) {
		t.Fatalf("the guard %d is not there", guard)
	}
	if err := prep.SetKillDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Errorf("SetKillDeadline: %v", err)
	}
	prep.Discard()
	if !reaped(guard) {
		t.Errorf("the guard %d was not reaped by Discard", guard)
	}
	noFile(t, ran, "the command ran")
	prep.Discard()
	if _, err := prep.Launch(nil); !errors.Is(err, errSpent) {
		t.Errorf("Launch after Discard: %v, want errSpent", err)
	}
	if err := prep.SetKillDeadline(time.Now()); err != nil {
		t.Errorf("SetKillDeadline after Discard: %v", err)
	}
}

func TestLaunchIsOnce(t *testing.T) {
	t.Parallel()
	pr := prepareChild(t, Config{})
	pr.launch(t, "RUNNER_TEST_CHILD=exit", "RUNNER_TEST_CODE=7")
	if _, err := pr.prep.Launch(nil); !errors.Is(err, errSpent) {
		t.Errorf("second Launch: %v, want errSpent", err)
	}
	pr.prep.Discard() // does nothing after Launch
	if res := pr.wait(t); res != (Result{ExitCode: 7}) {
		t.Errorf("Result = %+v, want exit code 7", res)
	}
}

// Launch on a guard that died meanwhile fails, reaps the guard and starts
// nothing.
func TestLaunchAfterGuardDied(t *testing.T) {
	t.Parallel()
	ran := filepath.Join(t.TempDir(), "ran")
	pr := prepareChild(t, Config{Argv: []string{testExe, touchArg, ran}})
	guard := pr.prep.proc.pgid
	if err := unix.Kill(guard, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "guard", guard) // a zombie: its descriptors are closed
	p, err := pr.prep.Launch(testEnv())
	if !errors.Is(err, errGuardGone) {
		if p != nil {
			pr.p = p
		}
		t.Fatalf("Launch: %v, want errGuardGone", err)
	}
	if !strings.HasPrefix(err.Error(), "runner: ") || !strings.Contains(err.Error(), "killed") {
		t.Errorf("message %q lacks the package name or the guard's end", err)
	}
	if !reaped(guard) {
		t.Errorf("the guard %d was not reaped", guard)
	}
	noFile(t, ran, "the command ran")
}

func TestLaunchRejectsNUL(t *testing.T) {
	t.Parallel()
	pr := prepareChild(t, Config{})
	guard := pr.prep.proc.pgid
	if _, err := pr.prep.Launch([]string{"A=b\x00c"}); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("Launch: %v, want an error about NUL", err)
	}
	if !reaped(guard) {
		t.Errorf("the guard %d was not reaped", guard)
	}
}

// TestPreparedLeaderrunKilled kills a process that plays leaderrun waiting
// for the lease (it has called Prepare) with SIGKILL: its guard must go
// without starting the command.
func TestPreparedLeaderrunKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	helper, stderr := startHelper(t, "RUNNER_TEST_CHILD=prepare", "RUNNER_TEST_DIR="+dir)
	ended := make(chan struct{})
	var log bytes.Buffer
	go func() {
		defer close(ended)
		defer stderr.Close()
		_, _ = io.Copy(&log, stderr)
	}()

	guard := readPid(t, filepath.Join(dir, "guard"))
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	waitGone(t, "guard", guard)
	select {
	case <-ended:
	case <-time.After(within):
		t.Fatal("something still holds the helper's stderr")
	}
	noFile(t, filepath.Join(dir, "ran"), "the command ran")
	if strings.Contains(log.String(), "[ERROR]") || strings.Contains(log.String(), guardArg) {
		t.Errorf("the helper or the guard complained:\n%s", log.String())
	}
}

func TestPreparedKillDeadline(t *testing.T) {
	t.Parallel()
	t.Run("past at launch: nothing starts", func(t *testing.T) {
		t.Parallel()
		ran := filepath.Join(t.TempDir(), "ran")
		pr := prepareChild(t, Config{Argv: []string{testExe, touchArg, ran}})
		if err := pr.prep.SetKillDeadline(time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		pr.launch(t)
		if res := pr.wait(t); res.Signal != syscall.SIGKILL {
			t.Errorf("Result = %+v, want killed by SIGKILL", res)
		}
		noFile(t, ran, "the command started past its deadline")
	})
	t.Run("the zero time at launch: nothing starts", func(t *testing.T) {
		t.Parallel()
		ran := filepath.Join(t.TempDir(), "ran")
		pr := prepareChild(t, Config{Argv: []string{testExe, touchArg, ran}})
		if err := pr.prep.SetKillDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		pr.launch(t)
		if res := pr.wait(t); res.Signal != syscall.SIGKILL {
			t.Errorf("Result = %+v, want killed by SIGKILL", res)
		}
		noFile(t, ran, "the command started past its deadline")
	})
	t.Run("passes after launch", func(t *testing.T) {
		t.Parallel()
		pr := prepareChild(t, Config{KillGrace: time.Hour})
		deadline := time.Now().Add(300 * time.Millisecond)
		if err := pr.prep.SetKillDeadline(deadline); err != nil {
			t.Fatal(err)
		}
		pr.launch(t, "RUNNER_TEST_CHILD=sleep")
		res := pr.wait(t)
		if res.Signal != syscall.SIGKILL {
			t.Errorf("Result = %+v, want killed by SIGKILL", res)
		}
		if early := time.Until(deadline); early > 0 {
			t.Errorf("killed %v before the deadline", early)
		}
	})
	t.Run("replaced before launch", func(t *testing.T) {
		t.Parallel()
		pr := prepareChild(t, Config{})
		if err := pr.prep.SetKillDeadline(time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := pr.prep.SetKillDeadline(time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		pr.launch(t, "RUNNER_TEST_CHILD=sleep")
		pr.expect(t, "ready")
		pr.running(t)
	})
	t.Run("moved forward after launch", func(t *testing.T) {
		t.Parallel()
		// The go-ahead's deadline must not overtake the later one.
		pr := prepareChild(t, Config{})
		first := time.Now().Add(time.Second)
		if err := pr.prep.SetKillDeadline(first); err != nil {
			t.Fatal(err)
		}
		pr.launch(t, "RUNNER_TEST_CHILD=sleep")
		if err := pr.prep.SetKillDeadline(time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		pr.expect(t, "ready")
		select {
		case <-pr.p.Done():
			t.Fatalf("the command ended at the replaced deadline: %+v", pr.p.Result())
		case <-time.After(time.Until(first) + 2*time.Second):
		}
	})
}

func TestLaunchFraming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		deadline int64
		env      []string
	}{
		{"nil", 0, nil},
		{"empty", -1, []string{}},
		{"one empty entry", 1, []string{""}},
		{"awkward values", 1 << 62, []string{"A=", "B=x=y", "=C", "D=line\nline\n", "", "E", "F=\xff"}},
		{"bigger than a read", 42, []string{"BIG=" + strings.Repeat("x", 200<<10), "AFTER=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg, err := encodeLaunch(tt.deadline, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			deadline, env, err := decodeLaunch(bytes.NewReader(msg))
			if err != nil {
				t.Fatal(err)
			}
			if deadline != tt.deadline || env == nil || !slices.Equal(env, tt.env) {
				t.Errorf("round trip gave %d, %.100q; want %d, %.100q", deadline, env, tt.deadline, tt.env)
			}
			// Cut short anywhere (leaderrun dying while it writes), it is
			// never taken for a go-ahead.
			step := 1
			if len(msg) > 1000 {
				step = 997
			}
			for n := 0; n < len(msg); n += step {
				_, _, err := decodeLaunch(bytes.NewReader(msg[:n]))
				switch {
				case n == 0 && !errors.Is(err, io.EOF):
					t.Errorf("nothing read: %v, want io.EOF", err)
				case n > 0 && err == nil:
					t.Errorf("the first %d bytes of %d decoded", n, len(msg))
				}
			}
		})
	}
	if _, err := encodeLaunch(0, []string{"A=1", "B=\x00"}); err == nil {
		t.Error("an entry with NUL was encoded")
	}
	for _, bad := range []struct {
		name string
		msg  []byte
	}{
		{"unterminated", append(header(1, 3), "A=1"...)},
		{"fewer entries", append(header(2, 4), "A=1\x00"...)},
		{"more entries", append(header(1, 8), "A=1\x00B=2\x00"...)},
		{"more entries than bytes", header(3, 2)},
		{"too large", header(1, maxLaunchSize+1)},
	} {
		if _, _, err := decodeLaunch(bytes.NewReader(bad.msg)); err == nil || errors.Is(err, io.EOF) {
			t.Errorf("%s: %v, want an error", bad.name, err)
		}
	}
}

// header is a go-ahead's header that announces count entries in size bytes.
func header(count, size uint32) []byte {
	msg, _ := encodeLaunch(7, nil)
	binary.BigEndian.PutUint32(msg[8:], count)
	binary.BigEndian.PutUint32(msg[12:], size)
	return msg
}
