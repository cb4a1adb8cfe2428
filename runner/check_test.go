//go:build unix

package runner

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Check answers each run: nil for exit 0; the status and the output's end
// otherwise; a timeout kills the check; a cancelled context is its error.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, cmd string
		timeout   time.Duration
		why, out  string
		cancelled bool
	}{
		{name: "passes", cmd: "true"},
		{name: "fails", cmd: "echo starting; echo 'db not up' >&2; exit 3", why: "exit status 3", out: "starting\ndb not up"},
		{name: "times out", cmd: "sleep 30", timeout: 200 * time.Millisecond, why: "timed out after 200ms"},
		{name: "cancelled", cmd: "sleep 30", cancelled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.cancelled {
				time.AfterFunc(100*time.Millisecond, cancel)
			}
			start := time.Now()
			err := Check(ctx, HealthConfig{Cmd: tc.cmd, Timeout: tc.timeout, Env: testEnv()})
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("the check took %v", took)
			}
			var ce *CheckError
			switch {
			case tc.cancelled:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Check: %v, want the context's error", err)
				}
			case tc.why == "":
				if err != nil {
					t.Errorf("Check: %v, want nil", err)
				}
			case !errors.As(err, &ce):
				t.Errorf("Check: %v, want a *CheckError", err)
			case ce.Why != tc.why || ce.Output != tc.out:
				t.Errorf("Check: why %q, output %q; want %q, %q", ce.Why, ce.Output, tc.why, tc.out)
			}
		})
	}
}
