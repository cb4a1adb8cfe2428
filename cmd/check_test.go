package cmd

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// check's exit statuses are the monitoring plugins' (0–3), whatever ends
// it, and its one line goes to stdout.
func TestCheckExitMapping(t *testing.T) {
	for _, st := range []checkState{stateOK, stateWarning, stateCritical, stateUnknown} {
		err := &pluginExit{res: checkResult{State: st, Line: st.String() + ": x"}}
		if got := exitCode(err); got != int(st) {
			t.Errorf("exitCode(%s) = %d, want %d", st, got, int(st))
		}
		var out, errOut bytes.Buffer
		a := &app{stdout: &out, stderr: &errOut, log: newLogger(&errOut, logOptions{level: "info"})}
		a.report(err)
		if out.String() != st.String()+": x\n" || errOut.Len() != 0 {
			t.Errorf("report(%s): stdout %q, stderr %q; want the line on stdout only", st, out.String(), errOut.String())
		}
	}
}

// Usage errors of check are UNKNOWN (3), with one line on stdout that
// begins "UNKNOWN", never leaderrun's 64.
func TestCheckUsageIsUnknown(t *testing.T) {
	t.Setenv("LEADERRUN_LEASE", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing -c", []string{"check", "-l", "job"}, "missing -c AGE"},
		{"bad duration", []string{"check", "-l", "job", "--max-age", "soon"}, `invalid argument "soon"`},
		{"zero", []string{"check", "-l", "job", "--max-age", "0s"}, "must be more than 0"},
		{"negative", []string{"check", "-l", "job", "--max-age", "-1h"}, "must be more than 0"},
		{"missing lease", []string{"check", "--max-age", "1h"}, "missing lease name"},
		{"unknown flag", []string{"check", "-l", "job", "--max-age", "1h", "--bogus"}, "unknown flag: --bogus"},
		{"extra argument", []string{"check", "-l", "job", "--max-age", "1h", "extra"}, "unexpected arguments"},
		{"bad log level", []string{"check", "-l", "job", "--max-age", "1h", "--log-level", "bogus"}, `invalid --log-level "bogus"`},
		{"-w not below -c", []string{"check", "-l", "job", "-w", "2h", "-c", "1h"}, "invalid -w 2h0m0s: must be more than 0 and less than -c 1h0m0s"},
		{"-w at -c", []string{"check", "-l", "job", "-w", "1h", "-c", "1h"}, "less than -c"},
		{"-w zero", []string{"check", "-l", "job", "-w", "0", "-c", "1h"}, "invalid -w"},
		{"-w alone", []string{"check", "-l", "job", "-w", "1h"}, "missing -c AGE"},
		{"-c and --max-age", []string{"check", "-l", "job", "-c", "1h", "--max-age", "2h"}, "one setting"},
		{"zero -c", []string{"check", "-l", "job", "-c", "0"}, "invalid -c 0s"},
		{"zero timeout", []string{"check", "-l", "job", "-c", "1h", "-t", "0"}, "invalid -t 0s"},
		{"bad timeout", []string{"check", "-l", "job", "-c", "1h", "-t", "soon"}, `invalid argument "soon"`},
		{"negative starting deadline", []string{"check", "-l", "job", "-c", "1h", "--starting-deadline", "-1m"}, "invalid --starting-deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := execute(tt.args, &out, &errOut)
			if code != 3 {
				t.Errorf("exit %d, want 3 (UNKNOWN)", code)
			}
			line := out.String()
			if !strings.HasPrefix(line, "UNKNOWN: ") || strings.Count(line, "\n") != 1 || !strings.Contains(line, tt.want) {
				t.Errorf("stdout %q, want one UNKNOWN line with %q", line, tt.want)
			}
		})
	}
}

// Storage that cannot be reached is UNKNOWN too.
func TestCheckUnreachableIsUnknown(t *testing.T) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	t.Setenv("AZURE_STORAGE_ACCOUNT", "devstoreaccount1")
	t.Setenv("AZURE_STORAGE_KEY", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
	var out, errOut bytes.Buffer
	code := execute([]string{"check", "-l", "job", "--max-age", "1h", "--endpoint", "http://127.0.0.1:1/devstoreaccount1"}, &out, &errOut)
	if code != 3 || !strings.HasPrefix(out.String(), "UNKNOWN: ") || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("exit %d, stdout %q; want 3 and one UNKNOWN line", code, out.String())
	}
	if strings.Contains(out.String()+errOut.String(), "Eby8vdM02") {
		t.Error("the account key appears in the output")
	}
}

// check's flags as the Monitoring Plugins guidelines name them; --max-age
// is -c's first name.
func TestCheckFlags(t *testing.T) {
	t.Setenv("LEADERRUN_LEASE", "")
	tests := []struct {
		args []string
		want checkOptions // loc left out
	}{
		{[]string{"-c", "26h"}, checkOptions{critical: 26 * time.Hour, timeout: 10 * time.Second}},
		{[]string{"--max-age", "26h"}, checkOptions{critical: 26 * time.Hour, maxAge: 26 * time.Hour, timeout: 10 * time.Second}},
		{[]string{"-w", "25h", "--critical", "93600", "-t", "30", "-vv"}, checkOptions{warning: 25 * time.Hour, critical: 26 * time.Hour, timeout: 30 * time.Second, verbose: 2}},
		{[]string{"--warning=1m", "-c", "2m", "--timeout", "2s", "--starting-deadline", "10m", "-v", "--verbose"},
			checkOptions{warning: time.Minute, critical: 2 * time.Minute, timeout: 2 * time.Second, deadline: 10 * time.Minute, verbose: 2}},
	}
	for _, tt := range tests {
		o := &checkOptions{timeout: checkTimeout}
		fs := pflag.NewFlagSet("check", pflag.ContinueOnError)
		o.addFlags(fs)
		spanFlags(fs)
		if err := fs.Parse(append([]string{"-l", "job"}, tt.args...)); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if err := o.complete(fs); err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		o.loc = locationOptions{}
		if *o != tt.want {
			t.Errorf("%v: %+v, want %+v", tt.args, *o, tt.want)
		}
	}
}

// -t: storage that accepts the connection and never answers is UNKNOWN
// once -t has passed, and says so.
func TestCheckTimeoutIsUnknown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	t.Setenv("AZURE_STORAGE_ACCOUNT", "devstoreaccount1")
	t.Setenv("AZURE_STORAGE_KEY", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
	var out, errOut bytes.Buffer
	code := execute([]string{"check", "-l", "job", "-c", "1h", "-t", "1", "--endpoint", "http://" + ln.Addr().String() + "/devstoreaccount1"}, &out, &errOut)
	want := "UNKNOWN: no answer from the storage service within 1s (-t)\n"
	if code != 3 || out.String() != want {
		t.Errorf("exit %d, stdout %q; want 3 and %q", code, out.String(), want)
	}
}
