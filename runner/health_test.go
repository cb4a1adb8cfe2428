//go:build unix

package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
)

// The checks are shell scripts; they find their files through the
// environment (L: a file each run appends a line to, P and S: where the
// shell and its sleeping child append their pids).
const (
	countRun  = `echo run >> "$L"; `
	sleepLong = `echo $$ >> "$P"; sleep %s & echo $! >> "$S"; wait`
)

// checker is a started health checker and its log.
type checker struct {
	ch    <-chan error
	stop  context.CancelFunc
	log   *lockedBuffer
	start time.Time
	dir   string
}

// startHealth starts a checker of cfg with a fresh directory for its files
// in the environment (see countRun and sleepLong), unless cfg.Env is set.
// Cleanup stops it and waits for it to be gone.
func startHealth(t *testing.T, cfg HealthConfig) *checker {
	t.Helper()
	c := &checker{log: &lockedBuffer{}, dir: t.TempDir()}
	if cfg.Env == nil {
		cfg.Env = append(testEnv(), "L="+c.path("runs"), "P="+c.path("sh"), "S="+c.path("sleep"))
	}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: c.log, Level: hclog.Debug})
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.start = time.Now()
	ch, err := StartHealth(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("StartHealth: %v", err)
	}
	c.ch = ch
	t.Cleanup(func() {
		cancel()
		timeout := time.After(within)
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					if t.Failed() {
						t.Logf("health log:\n%s", c.log.String())
					}
					return
				}
			case <-timeout:
				t.Errorf("cleanup: the checker did not stop")
				return
			}
		}
	})
	return c
}

func (c *checker) path(name string) string { return filepath.Join(c.dir, name) }

// unhealthy waits for the checker to report the command unhealthy, then for
// the channel to be closed.
func (c *checker) unhealthy(t *testing.T) *UnhealthyError {
	t.Helper()
	var ue *UnhealthyError
	select {
	case err, ok := <-c.ch:
		if !ok {
			t.Fatal("the channel was closed without an error")
		}
		if !errors.As(err, &ue) {
			t.Fatalf("got %v (%T), want *UnhealthyError", err, err)
		}
	case <-time.After(within):
		t.Fatalf("not unhealthy within %v", within)
	}
	c.closed(t)
	return ue
}

// closed expects the channel to be closed, with no value, within a bound.
func (c *checker) closed(t *testing.T) {
	t.Helper()
	select {
	case err, ok := <-c.ch:
		if ok {
			t.Fatalf("got %v, want the channel closed", err)
		}
	case <-time.After(goneTime):
		t.Fatalf("the channel was not closed within %v", goneTime)
	}
}

// lines returns the lines of the file name in the checker's directory.
func (c *checker) lines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(c.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// waitLines waits for the file name to have at least n lines.
func (c *checker) waitLines(t *testing.T, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for len(c.lines(t, name)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d lines after %v, want %d", name, len(c.lines(t, name)), within, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pids returns the pids listed in the file name.
func (c *checker) pids(t *testing.T, name string) []int {
	t.Helper()
	var pids []int
	for _, s := range c.lines(t, name) {
		pid, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// allGone checks, without waiting, that the shells and sleeps recorded by
// sleepLong are gone, and that there was at least one sleep.
func (c *checker) allGone(t *testing.T) {
	t.Helper()
	sleeps := c.pids(t, "sleep")
	if len(sleeps) == 0 {
		t.Fatal("no check got as far as starting its sleep")
	}
	for _, pid := range append(c.pids(t, "sh"), sleeps...) {
		if !gone(pid) {
			t.Errorf("process %d of a check still runs", pid)
		}
	}
}

func TestHealthUnhealthyAfterRetries(t *testing.T) {
	t.Parallel()
	const interval = 20 * time.Millisecond
	for _, retries := range []int{1, 3} {
		t.Run(strconv.Itoa(retries), func(t *testing.T) {
			t.Parallel()
			c := startHealth(t, HealthConfig{Cmd: countRun + "echo failing; exit 1", Interval: interval, Timeout: within, Retries: retries})
			ue := c.unhealthy(t)
			took := time.Since(c.start)
			want := UnhealthyError{Failures: retries, Last: "exit status 1", Output: "failing"}
			if *ue != want {
				t.Errorf("got %+v, want %+v", *ue, want)
			}
			if msg := "runner: health check failed " + strconv.Itoa(retries) + " times in a row: exit status 1"; ue.Error() != msg {
				t.Errorf("Error() = %q, want %q", ue.Error(), msg)
			}
			if runs := len(c.lines(t, "runs")); runs != retries {
				t.Errorf("the check ran %d times, want %d", runs, retries)
			}
			// Every check, the first included, waits an interval first.
			if min := time.Duration(retries) * interval; took < min {
				t.Errorf("unhealthy after %v, before %d intervals (%v)", took, retries, min)
			}
			log := c.log.String()
			for _, want := range []string{"[DEBUG] health: health check failed", "[DEBUG] health: command unhealthy"} {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
		})
	}
}

func TestHealthTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	c := startHealth(t, HealthConfig{Cmd: fmt.Sprintf(sleepLong, "5"), Interval: 20 * time.Millisecond, Timeout: timeout, Retries: 2})
	ue := c.unhealthy(t)
	if took := time.Since(c.start); took >= 5*time.Second {
		t.Errorf("unhealthy after %v: the checks were not cut at their timeout", took)
	}
	if ue.Failures != 2 || ue.Last != "timed out after "+timeout.String() {
		t.Errorf("got %+v, want 2 failures, the last timed out after %v", *ue, timeout)
	}
	if n := len(c.lines(t, "sh")); n != 2 {
		t.Errorf("%d checks ran, want 2", n)
	}
	c.allGone(t)
}

func TestHealthFlapping(t *testing.T) {
	t.Parallel()
	// Fail, fail, pass, fail, fail, pass...
	const flap = countRun + `n=$(wc -l < "$L"); [ $((n % 3)) -eq 0 ]`
	t.Run("never unhealthy with 3 retries", func(t *testing.T) {
		t.Parallel()
		c := startHealth(t, HealthConfig{Cmd: flap, Interval: 20 * time.Millisecond, Timeout: within, Retries: 3})
		c.waitLines(t, "runs", 15)
		select {
		case err := <-c.ch:
			t.Fatalf("got %v after %d checks", err, len(c.lines(t, "runs")))
		default:
		}
		c.stop()
		c.closed(t)
		if log := c.log.String(); !strings.Contains(log, "[INFO]  health: health check passing again: after_failures=2") {
			t.Errorf("log lacks the recovery:\n%s", log)
		}
	})
	t.Run("unhealthy with 2", func(t *testing.T) {
		t.Parallel()
		c := startHealth(t, HealthConfig{Cmd: flap, Interval: 20 * time.Millisecond, Timeout: within, Retries: 2})
		if ue := c.unhealthy(t); ue.Failures != 2 {
			t.Errorf("got %+v, want 2 failures", *ue)
		}
		if n := len(c.lines(t, "runs")); n != 2 {
			t.Errorf("the check ran %d times, want 2", n)
		}
	})
}

func TestHealthStartPeriod(t *testing.T) {
	t.Parallel()
	t.Run("failures in it do not count", func(t *testing.T) {
		t.Parallel()
		const period = time.Second
		c := startHealth(t, HealthConfig{Cmd: countRun + "exit 1", Interval: 20 * time.Millisecond, Timeout: within, Retries: 2, StartPeriod: period})
		ue := c.unhealthy(t)
		if took := time.Since(c.start); took < period {
			t.Errorf("unhealthy after %v, within the start period of %v", took, period)
		}
		if ue.Failures != 2 {
			t.Errorf("got %+v, want 2 failures", *ue)
		}
		// Checks start every 20 ms or so: some ran in the period.
		if n := len(c.lines(t, "runs")); n <= 2 {
			t.Errorf("the check ran %d times, want more than the 2 counted", n)
		}
	})
	t.Run("a pass ends it", func(t *testing.T) {
		t.Parallel()
		// Pass once, then fail.
		c := startHealth(t, HealthConfig{Cmd: countRun + `[ $(wc -l < "$L") -eq 1 ]`, Interval: 20 * time.Millisecond, Timeout: within, Retries: 2, StartPeriod: time.Hour})
		if ue := c.unhealthy(t); ue.Failures != 2 {
			t.Errorf("got %+v, want 2 failures", *ue)
		}
		if n := len(c.lines(t, "runs")); n != 3 {
			t.Errorf("the check ran %d times, want 3 (a pass, then 2 counted failures)", n)
		}
	})
}

func TestHealthStops(t *testing.T) {
	t.Parallel()
	t.Run("a running check is killed", func(t *testing.T) {
		t.Parallel()
		c := startHealth(t, HealthConfig{Cmd: fmt.Sprintf(sleepLong, "100"), Interval: 20 * time.Millisecond, Timeout: time.Minute})
		c.waitLines(t, "sleep", 1)
		start := time.Now()
		c.stop()
		c.closed(t)
		if took := time.Since(start); took > goneTime {
			t.Errorf("stopped %v after the cancel", took)
		}
		c.allGone(t)
		if n := len(c.lines(t, "sh")); n != 1 {
			t.Errorf("%d checks ran, want 1", n)
		}
	})
	t.Run("between checks", func(t *testing.T) {
		t.Parallel()
		c := startHealth(t, HealthConfig{Cmd: countRun + "exit 1", Interval: time.Hour})
		c.stop()
		c.closed(t)
		if n := len(c.lines(t, "runs")); n != 0 {
			t.Errorf("the check ran %d times, want none", n)
		}
	})
	t.Run("no check", func(t *testing.T) {
		t.Parallel()
		c := startHealth(t, HealthConfig{Interval: time.Millisecond})
		select {
		case err := <-c.ch:
			t.Fatalf("got %v before the cancel", err)
		default:
		}
		c.stop()
		c.closed(t)
	})
}

func TestHealthOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cmd     string
		timeout time.Duration
		last    string
		check   func(t *testing.T, out string)
	}{
		{"stdout and stderr", "echo out; echo err >&2; exit 3", within, "exit status 3", func(t *testing.T, out string) {
			if out != "out\nerr" {
				t.Errorf("Output = %q, want %q", out, "out\nerr")
			}
		}},
		{"only the last 4 KiB", `i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done; echo END; exit 1`, within, "exit status 1",
			func(t *testing.T, out string) {
				if len(out) > 4096 || len(out) < 4000 || !strings.HasSuffix(out, "line-1999\nEND") {
					t.Errorf("Output has %d bytes, want the last 4 KiB ending in END: ...%q", len(out), out[max(0, len(out)-40):])
				}
			}},
		{"cut inside a character", `printf 'x\342\202\254%04095d' 0; exit 1`, within, "exit status 1", func(t *testing.T, out string) {
			// The kept 4096 bytes start inside the euro sign: it is dropped.
			if out != strings.Repeat("0", 4095) {
				t.Errorf("Output = %q..., want 4095 zeros", out[:min(10, len(out))])
			}
		}},
		{"timed out", "echo before; sleep 5; true", 200 * time.Millisecond, "timed out after 200ms", func(t *testing.T, out string) {
			if out != "before" {
				t.Errorf("Output = %q, want %q", out, "before")
			}
		}},
		{"ended by a signal", "echo bye; kill -TERM $$", within, "signal: terminated", func(t *testing.T, out string) {
			if out != "bye" {
				t.Errorf("Output = %q, want %q", out, "bye")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := startHealth(t, HealthConfig{Cmd: tt.cmd, Interval: 10 * time.Millisecond, Timeout: tt.timeout, Retries: 1})
			ue := c.unhealthy(t)
			if ue.Last != tt.last {
				t.Errorf("Last = %q, want %q", ue.Last, tt.last)
			}
			if !utf8.ValidString(ue.Output) {
				t.Errorf("Output is not valid UTF-8: %q", ue.Output)
			}
			tt.check(t, ue.Output)
		})
	}
}

// healthChild is the "health" test child: it plays leaderrun running a
// check (RUNNER_TEST_HEALTH_CMD) that fails once, and prints only the
// quoted output that the UnhealthyError carries.
func healthChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), childLife)
	defer cancel()
	ch, err := StartHealth(ctx, HealthConfig{Cmd: os.Getenv("RUNNER_TEST_HEALTH_CMD"), Interval: 10 * time.Millisecond, Retries: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var ue *UnhealthyError
	if err := <-ch; !errors.As(err, &ue) {
		fmt.Fprintln(os.Stderr, "not unhealthy:", err)
		return 1
	}
	fmt.Printf("unhealthy %q\n", ue.Output)
	return 0
}

// The check's output goes to the UnhealthyError only, never to leaderrun's
// stdout or stderr.
func TestHealthOutputNotPassedOn(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(testExe)
	cmd.Env = append(testEnv(), "RUNNER_TEST_CHILD=health", "RUNNER_TEST_HEALTH_CMD=echo out; echo err >&2; exit 1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runOwn(cmd); err != nil {
		t.Fatalf("%v; stderr: %s", err, stderr.String())
	}
	if want := "unhealthy \"out\\nerr\"\n"; stdout.String() != want || stderr.Len() != 0 {
		t.Errorf("stdout %q, stderr %q; want stdout %q and nothing on stderr", stdout.String(), stderr.String(), want)
	}
}

func TestHealthEnv(t *testing.T) {
	t.Run("given", func(t *testing.T) {
		c := startHealth(t, HealthConfig{Cmd: `echo "term=$LEADERRUN_TERM"; exit 1`, Env: []string{"LEADERRUN_TERM=42"}, Interval: 10 * time.Millisecond, Retries: 1})
		if ue := c.unhealthy(t); ue.Output != "term=42" {
			t.Errorf("Output = %q, want term=42", ue.Output)
		}
	})
	t.Run("nil is leaderrun's", func(t *testing.T) {
		t.Setenv("LEADERRUN_TEST_HEALTH", "inherited")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := StartHealth(ctx, HealthConfig{Cmd: `echo "$LEADERRUN_TEST_HEALTH"; exit 1`, Interval: 10 * time.Millisecond, Retries: 1})
		if err != nil {
			t.Fatal(err)
		}
		var ue *UnhealthyError
		select {
		case err := <-ch:
			if !errors.As(err, &ue) || ue.Output != "inherited" {
				t.Errorf("got %#v, want an UnhealthyError with output %q", err, "inherited")
			}
		case <-time.After(within):
			t.Fatal("not unhealthy")
		}
	})
}

func TestHealthConfigValidate(t *testing.T) {
	t.Parallel()
	valid := HealthConfig{Cmd: "true", Interval: time.Second, Timeout: time.Second, Retries: 1}
	tests := []struct {
		name   string
		change func(*HealthConfig)
		want   string // part of the error; empty for none
	}{
		{"valid", func(*HealthConfig) {}, ""},
		{"with a start period", func(c *HealthConfig) { c.StartPeriod = time.Minute }, ""},
		{"no command is still checked", func(c *HealthConfig) { c.Cmd = ""; c.Retries = 0 }, "retries 0"},
		{"negative interval", func(c *HealthConfig) { c.Interval = -time.Second }, "interval -1s"},
		{"zero interval", func(c *HealthConfig) { c.Interval = 0 }, "interval 0s"},
		{"negative timeout", func(c *HealthConfig) { c.Timeout = -time.Second }, "timeout -1s"},
		{"zero timeout", func(c *HealthConfig) { c.Timeout = 0 }, "timeout 0s"},
		{"zero retries", func(c *HealthConfig) { c.Retries = 0 }, "retries 0"},
		{"negative retries", func(c *HealthConfig) { c.Retries = -2 }, "retries -2"},
		{"negative start period", func(c *HealthConfig) { c.StartPeriod = -time.Second }, "start period -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.change(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "runner: ")):
				t.Errorf("Validate: %v, want an error about %q", err, tt.want)
			}
		})
	}

	d := HealthConfig{}.WithDefaults()
	if d.Interval != 30*time.Second || d.Timeout != 10*time.Second || d.Retries != 3 || d.StartPeriod != 0 {
		t.Errorf("WithDefaults() = %+v, want 30s, 10s, 3 retries, no start period", d)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("the defaults are invalid: %v", err)
	}
	if set := valid.WithDefaults(); set.Interval != valid.Interval || set.Timeout != valid.Timeout || set.Retries != valid.Retries {
		t.Errorf("WithDefaults changed values that were set: %+v", set)
	}
	// StartHealth applies the defaults, then refuses what is left invalid.
	if _, err := StartHealth(context.Background(), HealthConfig{Cmd: "true", Retries: -1}); err == nil {
		t.Error("StartHealth accepted -1 retries")
	}
}

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"short", []string{"a\n", "b\n"}, "a\nb"},
		{"exactly full", []string{"abc", "de"}, "abcde"},
		{"cut across writes", []string{"abc", "def"}, "bcdef"},
		{"one long write", []string{"abcdefgh"}, "defgh"},
		{"long write after short", []string{"xy", "abcde"}, "abcde"},
		{"partial character dropped", []string{"\u00e9bcde"}, "bcde"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTail(5)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if len(b.ring) != 5 || cap(b.ring) != 5 {
				t.Errorf("the ring grew: len %d cap %d", len(b.ring), cap(b.ring))
			}
		})
	}
}

// TestHealthKillsBeforeReaping: the check's group is killed while its
// shell, the group's leader, is still unreaped, so that neither its pid nor
// the group's id can have been reused by then. Not parallel: it sets a hook
// of the package. Linux only: elsewhere the shell is reaped first.
func TestHealthKillsBeforeReaping(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a check's shell is left unreaped on Linux only")
	}
	var kills, unreaped int
	testHookKillCheck = func(pgid int) {
		kills++
		if _, err := os.Stat("/proc/" + strconv.Itoa(pgid)); err == nil {
			unreaped++
		}
	}
	defer func() { testHookKillCheck = nil }()
	c := HealthConfig{Cmd: "exit 0", Logger: hclog.NewNullLogger()}.WithDefaults()
	for range 3 {
		if res := c.check(context.Background()); res.why != "" {
			t.Fatalf("the check failed: %s", res.why)
		}
	}
	if kills == 0 || unreaped != kills {
		t.Errorf("%d of %d kills of a check's group came after its shell was reaped", kills-unreaped, kills)
	}
}
