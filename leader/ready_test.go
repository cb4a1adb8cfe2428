package leader

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/runner"
)

// Readiness says why not to lead, and logs one INFO line per change of
// readiness: not when the failure's cause changes, nor for a host ready
// from the start.
func TestReadinessLogsChanges(t *testing.T) {
	var out bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info, DisableTime: true})
	answers := []error{
		nil,
		&runner.CheckError{Why: "exit status 1", Output: "db down"},
		&runner.CheckError{Why: "timed out after 10s"},
		nil,
		nil,
		errors.New("runner: could not start"),
	}
	i := 0
	r := newReadiness(log, &Options{CheckReady: func(context.Context) error { i++; return answers[i-1] }})
	var got []string
	for range answers {
		got = append(got, r.ask(t.Context()))
	}
	want := []string{"", "not ready (--ready-cmd: exit status 1)", "not ready (--ready-cmd: timed out after 10s)", "", "",
		"not ready (--ready-cmd: runner: could not start)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("answers %q, want %q", got, want)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "[INFO]  not ready") || !strings.Contains(lines[0], `output="db down"`) ||
		!strings.Contains(lines[1], "[INFO]  ready") || !strings.Contains(lines[2], "[INFO]  not ready") {
		t.Errorf("log:\n%s\nwant three INFO lines: not ready (with the output), ready, not ready", out.String())
	}
}

// A stop request during the check is no answer: the last one stands, and
// nothing is logged.
func TestReadinessStopped(t *testing.T) {
	var out bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info})
	ctx, cancel := context.WithCancel(t.Context())
	r := newReadiness(log, &Options{CheckReady: func(ctx context.Context) error { cancel(); return ctx.Err() }})
	if got := r.ask(ctx); got != "" || out.Len() != 0 {
		t.Errorf("answer %q, log %q: want neither", got, out.String())
	}
}

// Without --ready-cmd there is no readiness to ask; with it, the real
// check runs the command.
func TestReadinessCommand(t *testing.T) {
	if newReadiness(hclog.NewNullLogger(), &Options{}) != nil {
		t.Fatal("a readiness without --ready-cmd")
	}
	r := newReadiness(hclog.NewNullLogger(), &Options{ReadyCmd: "exit 4", ReadyTimeout: runner.DefaultHealthTimeout})
	if got := r.ask(t.Context()); got != "not ready (--ready-cmd: exit status 4)" {
		t.Errorf("answer %q", got)
	}
}
