package cmd

import (
	"bytes"
	"strings"
	"testing"
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
		{"missing max-age", []string{"check", "-l", "job"}, "missing --max-age"},
		{"bad duration", []string{"check", "-l", "job", "--max-age", "soon"}, `invalid argument "soon"`},
		{"zero", []string{"check", "-l", "job", "--max-age", "0s"}, "must be more than 0"},
		{"negative", []string{"check", "-l", "job", "--max-age", "-1h"}, "must be more than 0"},
		{"missing lease", []string{"check", "--max-age", "1h"}, "missing lease name"},
		{"unknown flag", []string{"check", "-l", "job", "--max-age", "1h", "--bogus"}, "unknown flag: --bogus"},
		{"extra argument", []string{"check", "-l", "job", "--max-age", "1h", "extra"}, "unexpected arguments"},
		{"bad log level", []string{"check", "-l", "job", "--max-age", "1h", "--log-level", "bogus"}, `invalid --log-level "bogus"`},
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
