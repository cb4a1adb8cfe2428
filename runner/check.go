//go:build unix

package runner

// check.go: one shell command run once, as one health check runs it, for a
// caller that wants every answer (leaderrun's --ready-cmd).

import (
	"cmp"
	"context"

	"github.com/hashicorp/go-hclog"
)

// CheckError says why a check failed.
type CheckError struct {
	// Why is "exit status N", "signal: ...", "timed out after D" or
	// "could not start: ...".
	Why string
	// Output is the end (at most 4 KiB) of its stdout and stderr,
	// interleaved as written, surrounding white space trimmed.
	Output string
}

func (e *CheckError) Error() string { return "runner: check failed: " + e.Why }

// Check runs cfg.Cmd once as StartHealth runs each check (sh -c in a
// process group of its own, stdin from /dev/null, output captured, the
// group killed when the shell exits or after cfg.Timeout) and returns nil
// when it exited 0, else a *CheckError; ctx.Err() if ctx ended first (the
// check then killed). Interval, Retries and StartPeriod do not apply.
func Check(ctx context.Context, cfg HealthConfig) error {
	cfg = cfg.WithDefaults()
	cfg.Logger = cmp.Or(cfg.Logger, hclog.NewNullLogger())
	res := cfg.check(ctx)
	switch {
	case res.canceled:
		return ctx.Err()
	case res.why == "":
		return nil
	}
	return &CheckError{Why: res.why, Output: res.output}
}
