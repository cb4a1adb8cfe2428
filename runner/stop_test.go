//go:build unix

package runner

import (
	"bufio"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOutsideSignalEndsCommand(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=sleep")
			r.expect(t, "ready")
			r.p.HandleSignal(sig)
			res := r.wait(t)
			if res != (Result{ExitCode: -1, Signal: sig}) || res.Code() != 128+int(sig) {
				t.Errorf("Result = %+v (Code %d), want killed by %v (%d)", res, res.Code(), sig, 128+int(sig))
			}
		})
	}
}

func TestForwardedSignalsKeepCommandRunning(t *testing.T) {
	t.Parallel()
	r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=catch", "RUNNER_TEST_SIGNALS=USR1,USR2,WINCH")
	r.expect(t, "ready")
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH} {
		r.p.HandleSignal(sig)
		r.expect(t, sig.String())
		r.running(t)
	}
	r.p.Stop(0)
	if res := r.wait(t); res.Signal != syscall.SIGKILL {
		t.Errorf("Result = %+v, want killed by SIGKILL", res)
	}
}

func TestOutsideStopRequestThenSIGKILL(t *testing.T) {
	t.Parallel()
	const grace = 500 * time.Millisecond
	r := startChild(t, Config{KillGrace: grace}, "RUNNER_TEST_CHILD=catch", "RUNNER_TEST_SIGNALS=TERM")
	r.expect(t, "ready")
	start := time.Now()
	r.p.HandleSignal(syscall.SIGTERM)
	r.expect(t, syscall.SIGTERM.String())
	res := r.wait(t)
	if took := time.Since(start); took < grace {
		t.Errorf("Done after %v, before the grace of %v", took, grace)
	}
	if res.Signal != syscall.SIGKILL {
		t.Errorf("Result = %+v, want killed by SIGKILL", res)
	}
}

func TestSecondInterruptKillsAtOnce(t *testing.T) {
	t.Parallel()
	r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=catch", "RUNNER_TEST_SIGNALS=INT")
	r.expect(t, "ready")
	r.p.HandleSignal(syscall.SIGINT)
	r.expect(t, syscall.SIGINT.String())
	r.running(t)
	r.p.HandleSignal(syscall.SIGINT)
	if res := r.wait(t); res.Signal != syscall.SIGKILL {
		t.Errorf("Result = %+v, want killed by SIGKILL", res)
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	const grace = time.Second
	tests := []struct {
		name    string
		env     []string
		grace   time.Duration
		want    Result
		minTook time.Duration
	}{
		{"exits on the stop signal", []string{"RUNNER_TEST_SIGNALS=TERM", "RUNNER_TEST_EXIT_ON=TERM"}, time.Hour, Result{ExitCode: 0}, 0},
		{"ignores it: SIGKILL after grace", []string{"RUNNER_TEST_SIGNALS=TERM"}, grace, Result{ExitCode: -1, Signal: syscall.SIGKILL}, grace},
		{"grace 0: SIGKILL at once", []string{"RUNNER_TEST_SIGNALS=TERM"}, 0, Result{ExitCode: -1, Signal: syscall.SIGKILL}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := startChild(t, Config{}, append(tt.env, "RUNNER_TEST_CHILD=catch")...)
			r.expect(t, "ready")
			start := time.Now()
			r.p.Stop(tt.grace)
			res := r.wait(t)
			took := time.Since(start)
			if res != tt.want {
				t.Errorf("Result = %+v, want %+v", res, tt.want)
			}
			if took < tt.minTook {
				t.Errorf("Done after %v, before the grace of %v", took, tt.minTook)
			}
		})
	}
}

func TestStopCustomSignal(t *testing.T) {
	t.Parallel()
	r := startChild(t, Config{StopSignal: syscall.SIGUSR2}, "RUNNER_TEST_CHILD=catch", "RUNNER_TEST_SIGNALS=USR2", "RUNNER_TEST_EXIT_ON=USR2")
	r.expect(t, "ready")
	r.p.Stop(time.Hour)
	if res := r.wait(t); res != (Result{}) {
		t.Errorf("Result = %+v, want exit 0 on SIGUSR2", res)
	}
}

func TestStopIsIdempotentAndOnlyShortens(t *testing.T) {
	t.Parallel()
	const short = 500 * time.Millisecond
	r := startChild(t, Config{}, "RUNNER_TEST_CHILD=catch", "RUNNER_TEST_SIGNALS=TERM")
	r.expect(t, "ready")
	r.p.Stop(time.Hour)
	r.p.Stop(time.Hour)
	start := time.Now()
	r.p.Stop(short)
	r.p.Stop(2 * time.Hour) // must not push SIGKILL back
	res := r.wait(t)
	if took := time.Since(start); took < short {
		t.Errorf("Done after %v, before the shortened grace of %v", took, short)
	}
	if res.Signal != syscall.SIGKILL {
		t.Errorf("Result = %+v, want killed by SIGKILL", res)
	}
	if got := r.rest(t); len(got) != 1 || got[0] != syscall.SIGTERM.String() {
		t.Errorf("the child got %q, want the stop signal once", got)
	}
	// After Done everything is a no-op.
	r.p.Stop(0)
	r.p.HandleSignal(syscall.SIGINT)
	r.p.HandleSignal(syscall.SIGTERM)
	r.p.HandleSignal(syscall.SIGUSR1)
	if r.p.Result() != res {
		t.Errorf("Result changed after Done")
	}
}

func TestGroupStopsWithCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		ignoreTerm string
		grace      time.Duration
		want       syscall.Signal
	}{
		{"grandchild stops on the stop signal", "", time.Hour, syscall.SIGTERM},
		{"grandchild ignores it: SIGKILL after grace", "1", 500 * time.Millisecond, syscall.SIGTERM},
		{"SIGKILL at once", "1", 0, syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pidfile := filepath.Join(t.TempDir(), "grand")
			// KillGrace is long: the Stop's deadline must be what counts.
			r := startChild(t, Config{KillGrace: time.Hour}, "RUNNER_TEST_CHILD=fork", "RUNNER_TEST_PIDFILE="+pidfile, "RUNNER_TEST_IGNORE_TERM="+tt.ignoreTerm)
			r.expect(t, "ready")
			grand := readPid(t, pidfile)
			start := time.Now()
			r.p.Stop(tt.grace)
			if res := r.wait(t); res.Signal != tt.want {
				t.Errorf("Result = %+v, want killed by %v", res, tt.want)
			}
			if took := time.Since(start); tt.ignoreTerm != "" && took < tt.grace {
				t.Errorf("Done after %v, before the grace of %v", took, tt.grace)
			}
			if !gone(grand) {
				t.Errorf("grandchild %d still runs after Done", grand)
			}
			if log := r.log.String(); strings.Contains(log, "[WARN]  runner: stopped processes") {
				t.Errorf("a stop under way gave a warning about leftovers:\n%s", log)
			}
		})
	}
}

func TestLeftoversStoppedBeforeDone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		ignoreTerm string
		grace      time.Duration
		stop       time.Duration // a Stop after the grandchild is up; 0 for none
		sigkill    bool
	}{
		{"stop on the stop signal", "", time.Hour, 0, false},
		{"SIGKILL after grace", "1", 500 * time.Millisecond, 0, true},
		{"a shorter Stop wins", "1", time.Hour, 300 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pidfile := filepath.Join(t.TempDir(), "grand")
			r := startChild(t, Config{KillGrace: tt.grace}, "RUNNER_TEST_CHILD=fork", "RUNNER_TEST_THEN=exit",
				"RUNNER_TEST_PIDFILE="+pidfile, "RUNNER_TEST_IGNORE_TERM="+tt.ignoreTerm)
			r.expect(t, "ready")
			grand := readPid(t, pidfile)
			if tt.stop > 0 {
				r.p.Stop(tt.stop)
			}
			res := r.wait(t)
			if !gone(grand) {
				t.Fatalf("grandchild %d still runs after Done", grand)
			}
			if tt.stop == 0 && res != (Result{}) {
				t.Errorf("Result = %+v, want the command's own exit 0", res)
			}
			if tt.stop > 0 {
				return // whether the command exited before the Stop is a race
			}
			log := r.log.String()
			want := "[WARN]  runner: stopped processes the command left running: pgid=" + strconv.Itoa(r.p.Pid()) + " sigkill=" + strconv.FormatBool(tt.sigkill)
			if !strings.Contains(log, want) {
				t.Errorf("log lacks %q:\n%s", want, log)
			}
		})
	}
}

// TestLeaderrunKilled kills a process that plays leaderrun (it calls Start)
// with SIGKILL, and expects the command's whole group to die with it, while
// the command runs and while its leftovers are being stopped.
func TestLeaderrunKilled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		then    string
		waitLog string // kill once the helper has logged this
	}{
		{"command running", "sleep", ""},
		{"leftovers being stopped", "exit", "stopping what it left running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			helper, stderr := startHelper(t, "RUNNER_TEST_CHILD=parent", "RUNNER_TEST_DIR="+dir,
				"RUNNER_TEST_THEN="+tt.then, "RUNNER_TEST_IGNORE_TERM=1", "RUNNER_TEST_GRACE=1h")
			logged := make(chan struct{})
			ended := make(chan struct{})
			var log strings.Builder
			go func() {
				defer close(ended)
				defer stderr.Close()
				want := tt.waitLog
				s := bufio.NewScanner(stderr)
				for s.Scan() {
					log.WriteString(s.Text() + "\n")
					if want != "" && strings.Contains(s.Text(), want) {
						close(logged)
						want = ""
					}
				}
			}()

			guard := readPid(t, filepath.Join(dir, "guard"))
			cmd := readPid(t, filepath.Join(dir, "cmd"))
			grand := readPid(t, filepath.Join(dir, "grand"))
			if tt.waitLog != "" {
				select {
				case <-logged:
				case <-time.After(within):
					t.Fatal("the helper did not log that it was stopping leftovers")
				}
			}
			if gone(grand) {
				t.Fatal("the grandchild is gone before the helper is killed")
			}
			if err := helper.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = helper.Wait()
			waitGone(t, "grandchild", grand)
			waitGone(t, "command", cmd)
			waitGone(t, "guard", guard)
			select {
			case <-ended:
			case <-time.After(within):
				t.Fatal("something still holds the helper's stderr")
			}
			if strings.Contains(log.String(), "[ERROR]") {
				t.Errorf("the helper logged an error:\n%s", log.String())
			}
		})
	}
}

func TestStatusRoundTrip(t *testing.T) {
	t.Parallel()
	for _, want := range []Result{{ExitCode: 0}, {ExitCode: 255}, {ExitCode: -1, Signal: syscall.SIGQUIT}} {
		got, ok := parseStatus(formatStatus(want.ExitCode, want.Signal))
		if !ok || got != want {
			t.Errorf("round trip of %+v gave %+v, %v", want, got, ok)
		}
	}
	for _, bad := range []string{"", "exit", "exit x", "stopped 3"} {
		if _, ok := parseStatus(bad); ok {
			t.Errorf("parseStatus(%q) succeeded", bad)
		}
	}
}

// TestGuardKilledAlone kills the guard alone, by its pid, while the command
// runs with a grandchild in its group: the command dies with it (Linux:
// parent-death signal; elsewhere as a leftover), the grandchild is stopped
// as a leftover, and the guard's own end is the Result.
func TestGuardKilledAlone(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "grand")
	r := startChild(t, Config{KillGrace: 300 * time.Millisecond}, "RUNNER_TEST_CHILD=fork",
		"RUNNER_TEST_PIDFILE="+pidfile, "RUNNER_TEST_IGNORE_TERM=1")
	r.expect(t, "ready")
	grand := readPid(t, pidfile)
	if err := syscall.Kill(r.p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if res := r.wait(t); res != (Result{ExitCode: -1, Signal: syscall.SIGKILL}) {
		t.Errorf("Result = %+v, want the guard's SIGKILL", res)
	}
	if !gone(grand) {
		t.Errorf("the grandchild %d still runs after Done", grand)
	}
}

// TestNothingLeftByAQuickCommand: a command that exits at once and leaves
// nothing running has nothing stopped after it (no warning): what the guard
// starts to leave the command's group (its anchor) is gone before the
// guard reports the command's end.
func TestNothingLeftByAQuickCommand(t *testing.T) {
	t.Parallel()
	for i := range 5 {
		r := startChild(t, Config{Argv: []string{"/bin/sh", "-c", "exit 3"}})
		if res := r.wait(t); res != (Result{ExitCode: 3}) {
			t.Errorf("run %d: Result = %+v, want exit 3", i, res)
		}
		if log := r.log.String(); strings.Contains(log, "left running") {
			t.Fatalf("run %d: something was stopped after a command that left nothing:\n%s", i, log)
		}
	}
}
