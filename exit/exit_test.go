package exit

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

func TestCode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		code   int
		ok     bool
		reason string
	}{
		{"none", errors.New("plain"), 0, false, "plain"},
		{"with a line", With(Unavailable, errors.New("storage refused")), Unavailable, true, "storage refused"},
		{"wrapped", fmt.Errorf("context: %w", With(Lost, errors.New("lost"))), Lost, true, "context: lost"},
		{"COMMAND's own, no line", With(3, nil), 3, true, "exit status 3"},
		{"usage", Usagef("invalid --slots %d", 0), Usage, true, "invalid --slots 0"},
		{"by a signal", BySignal(syscall.SIGTERM, errors.New("stopped")), 143, true, "stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ok := Code(tc.err)
			if code != tc.code || ok != tc.ok || tc.err.Error() != tc.reason {
				t.Errorf("Code = %d, %v; Error %q; want %d, %v, %q", code, ok, tc.err, tc.code, tc.ok, tc.reason)
			}
		})
	}
}

func TestSignalOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		sig  syscall.Signal
	}{
		{"none", errors.New("plain"), 0},
		{"a status", With(Lost, errors.New("lost")), 0},
		{"128+N alone does not raise", With(SignalBase+int(syscall.SIGKILL), nil), 0},
		{"by a signal", BySignal(syscall.SIGINT, nil), syscall.SIGINT},
		{"wrapped", fmt.Errorf("context: %w", BySignal(syscall.SIGABRT, nil)), syscall.SIGABRT},
	} {
		if got := SignalOf(tc.err); got != tc.sig {
			t.Errorf("%s: SignalOf = %v, want %v", tc.name, got, tc.sig)
		}
	}
}

func TestCut(t *testing.T) {
	long := strings.Repeat("a", 1024)
	for _, tc := range []struct{ in, cut, quote string }{
		{"cron/report", "cron/report", `"cron/report"`},
		{strings.Repeat("b", 80), strings.Repeat("b", 80), `"` + strings.Repeat("b", 80) + `"`},
		{long, strings.Repeat("a", 32) + "…" + strings.Repeat("a", 32) + " (1024 characters)",
			`"` + strings.Repeat("a", 32) + "…" + strings.Repeat("a", 32) + `" (1024 characters)`},
		{strings.Repeat("ü", 81), strings.Repeat("ü", 32) + "…" + strings.Repeat("ü", 32) + " (81 characters)",
			`"` + strings.Repeat("ü", 32) + "…" + strings.Repeat("ü", 32) + `" (81 characters)`},
		{"tab\there", "tab\there", `"tab\there"`},
	} {
		if got := Cut(tc.in); got != tc.cut {
			t.Errorf("Cut(%.20q…) = %q, want %q", tc.in, got, tc.cut)
		}
		if got := Quote(tc.in); got != tc.quote {
			t.Errorf("Quote(%.20q…) = %q, want %q", tc.in, got, tc.quote)
		}
	}
}
