package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/leaderrun/leaderrun/exit"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"usage", exit.Usagef("bad"), 64},
		{"wrapped usage", fmt.Errorf("x: %w", exit.Usagef("bad")), 64},
		{"cobra's own", errors.New(`unknown flag: --bogus`), 64},
		{"exit with reason", exit.With(69, errors.New("unreachable")), 69},
		{"exit without reason", exit.With(3, nil), 3},
		{"lost", exit.With(exit.Lost, errors.New("lost")), 76},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exitCode(tt.err); got != tt.want {
				t.Fatalf("exitCode = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestParseSignal(t *testing.T) {
	tests := []struct {
		in   string
		want syscall.Signal
		ok   bool
	}{
		{"TERM", syscall.SIGTERM, true},
		{"SIGTERM", syscall.SIGTERM, true},
		{"int", syscall.SIGINT, true},
		{"9", syscall.SIGKILL, true},
		{"HUP", syscall.SIGHUP, true},
		{"BOGUS", 0, false},
		{"0", 0, false},
		{"99", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSignal(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("parseSignal(%q) = %v, %v", tt.in, got, err)
			}
			if code, _ := exit.Code(err); err != nil && code != exit.Usage {
				t.Fatalf("error %v is not a usage error", err)
			}
		})
	}
}

// run executes leaderrun in-process with args; only for paths that stop
// before any storage request.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageErrors(t *testing.T) {
	t.Setenv("LEADERRUN_LEASE", "")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true")
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no command", []string{"-l", "x"}, "missing COMMAND"},
		{"nothing at all", nil, "Usage:"},
		{"command without --", []string{"-l", "x", "true"}, "after --"},
		{"args before --", []string{"-l", "x", "true", "--", "false"}, "before --"},
		{"missing lease", []string{"--", "true"}, "missing lease name"},
		{"unknown flag", []string{"-l", "x", "--bogus", "--", "true"}, "unknown flag"},
		{"negative timeout", []string{"-l", "x", "-w", "-1s", "--", "true"}, "--timeout"},
		{"conflict code range", []string{"-l", "x", "-E", "300", "--", "true"}, "conflict-exit-code"},
		{"zero poll", []string{"-l", "x", "--poll-interval", "0", "--", "true"}, "busy loop"},
		{"bad signal", []string{"-l", "x", "--kill-signal", "NOPE", "--", "true"}, "kill-signal"},
		{"bad log level", []string{"--log-level", "loud", "-l", "x", "--", "true"}, "log-level"},
		{"bad log format", []string{"--log-format", "xml", "-l", "x", "--", "true"}, "log-format"},
		{"status output", []string{"status", "-l", "x", "-o", "yaml"}, "--output"},
		{"status args", []string{"status", "-l", "x", "extra"}, "unexpected arguments"},
		{"status missing lease", []string{"status"}, "missing lease name"},
		{"unknown command", []string{"statsu", "-l", "x"}, `unknown command "statsu"; did you mean "status"?`},
		{"unknown command, no suggestion", []string{"frobnicate", "-l", "x"}, `unknown command "frobnicate"; to run it under a lease, put it after --, as in: leaderrun -- frobnicate -l x`},
		{"missing --, as typed", []string{"-l", "bad/x", "echo", "-n", "hi"}, "put COMMAND after --, as in: leaderrun -l bad/x -- echo -n hi ("},
		{"missing --, flags of both", []string{"-nq", "-w10m", "--lease=x", "--poll-interval", "5s", "ls", "-l", "my file"}, "as in: leaderrun -nq -w10m --lease=x --poll-interval 5s -- ls -l 'my file' ("},
		{"-c and --", []string{"-l", "x", "-c", "true", "--", "true"}, "cannot be used together"},
		{"empty -c", []string{"-l", "x", "-c", ""}, "invalid -c ''"},
		{"-c with more words", []string{"-l", "x", "-c", "echo", "hi"}, "unexpected arguments after -c STRING: hi (-c takes the whole command as one word: -c 'echo hi')"},
		{"completion of an unknown shell", []string{"completion", "tcsh"}, `unknown shell "tcsh": leaderrun completes bash, fish, powershell or zsh`},
		{"completion of no shell", []string{"completion"}, "missing shell"},
		{"help for a typo", []string{"help", "exit-statsu"}, `no help for "exit-statsu"; did you mean "exit-status"?`},
		{"help for nothing known", []string{"help", "frobnicate"}, `no help for "frobnicate": 'leaderrun --help' lists`},
		{"break --slot out of range", []string{"break", "-l", "x", "--slot", "50"}, "invalid --slot 50: use 0 to 49"},
		{"lease name over the limit", []string{"-l", strings.Repeat("a", 1017), "--", "true"}, `(1017 characters): a lease name may have at most 1016 characters`},
		{"negative max runtime", []string{"-l", "x", "--max-runtime", "-1s", "--", "true"}, "invalid --max-runtime -1s: must not be negative"},
		{"negative keep-output", []string{"-l", "x", "--keep-output", "-1", "--", "true"}, "invalid --keep-output -1: use 0 (off) to 16777216 bytes"},
		{"keep-output over the limit", []string{"-l", "x", "--keep-output", "16777217", "--", "true"}, "invalid --keep-output 16777217"},
		{"keep-output with a long lease name", []string{"-l", strings.Repeat("a", 1000), "--keep-output", "10", "--", "true"},
			"is too long for --keep-output: with it a lease name may have at most 988 characters"},
		{"logs term 0", []string{"logs", "-l", "x", "--term", "0"}, "invalid --term 0"},
		{"logs slot out of range", []string{"logs", "-l", "x", "--slot", "50"}, "invalid --slot 50: use 0 to 49"},
		{"logs output", []string{"logs", "-l", "x", "-o", "yaml"}, "--output"},
		{"long value cut", []string{"--log-level", strings.Repeat("x", 2000), "-l", "x", "--", "true"}, `" (2000 characters)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, tt.args...)
			if code != 64 {
				t.Fatalf("exit %d, want 64; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Fatalf("stderr does not mention %q:\n%s", tt.want, stderr)
			}
		})
	}
}

func TestEnvDefaults(t *testing.T) {
	t.Setenv("LEADERRUN_LEASE_DURATION", "soon")
	code, _, stderr := run(t, "-l", "x", "--", "true")
	if code != 64 || !strings.Contains(stderr, "LEADERRUN_LEASE_DURATION") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// Of several bad variables, and of several bad flags, the same one is
// named at every try.
func TestSeveralBadOnesNamedAlike(t *testing.T) {
	t.Setenv("LEADERRUN_LEASE_DURATION", "soon")
	t.Setenv("LEADERRUN_SCHEDULED_EVENTS", "maybe")
	t.Setenv("LEADERRUN_IDENTITY", "")
	said := func(args []string) string {
		code, _, stderr := run(t, args...)
		_, line, _ := strings.Cut(stderr, "[ERROR]") // after the time stamp
		if code != 64 || line == "" {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
		return line
	}
	for _, args := range [][]string{
		{"-l", "x", "--", "true"},
		{"-l", "x", "--lease-duration", "30s", "--scheduled-events", "-w", "-1s", "--splay", "-1s", "--kill-grace", "-1s", "--", "true"},
	} {
		first := said(args)
		for range 20 {
			if line := said(args); line != first {
				t.Fatalf("%v named %q, then %q", args, first, line)
			}
		}
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"status", "--help"}, {"break", "--help"}, {"version", "--help"}} {
		code, out, _ := run(t, args...)
		if code != 0 || !strings.Contains(out, "Examples:") {
			t.Errorf("%v: exit %d, no examples:\n%s", args, code, out)
		}
	}
}

// TestLookupBeforeStorage: a COMMAND that cannot be run exits 127 or 126
// before any storage request. The endpoint refuses connections, so a
// request would end in 69 after its retries, not in 126/127 at once.
func TestLookupBeforeStorage(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec.sh")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"+
		"AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"+
		"BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;")
	tests := []struct {
		argv0 string
		code  int
	}{
		{"no-such-command-here", 127},
		{filepath.Join(dir, "missing"), 127},
		{noexec, 126},
		{dir, 126}, // a directory
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.argv0), func(t *testing.T) {
			code, _, stderr := run(t, "-l", "x", "--", tt.argv0)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.argv0) || !strings.Contains(stderr, "not acquired") || strings.Contains(stderr, "storage") {
				t.Fatalf("stderr does not name the command and say nothing was acquired, or mentions storage:\n%s", stderr)
			}
		})
	}
}

// TestReportLevel: the line before an exit of leaderrun's own is an error,
// unless the status is 0 (-E 0), where it is info: -q prints nothing.
func TestReportLevel(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		quiet bool
		want  string // "" for no output
	}{
		{"conflict 75", exit.With(75, errors.New("held")), false, "[ERROR] leaderrun: held"},
		{"conflict 75, -q", exit.With(75, errors.New("held")), true, "[ERROR] leaderrun: held"},
		{"conflict -E 0", exit.With(0, errors.New("held")), false, "[INFO]  leaderrun: held"},
		{"conflict -E 0, -q", exit.With(0, errors.New("held")), true, ""},
		{"command's own status", exit.With(3, nil), false, ""},
		{"stopped while waiting", exit.BySignal(syscall.SIGTERM, errors.New("stopped by SIGTERM while waiting")), false, "[INFO]  leaderrun: stopped by SIGTERM"},
		{"stopped while waiting, -q", exit.BySignal(syscall.SIGTERM, errors.New("stopped by SIGTERM while waiting")), true, ""},
		{"COMMAND died of a signal", exit.BySignal(syscall.SIGTERM, nil), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			level := "info"
			if tt.quiet {
				level = "error"
			}
			a := &app{log: newLogger(&buf, logOptions{level: level})}
			a.report(tt.err)
			got := strings.TrimSpace(buf.String())
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("logged %q, want %q", got, tt.want)
			}
		})
	}
}
