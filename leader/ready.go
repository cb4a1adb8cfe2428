package leader

// Readiness (--ready-cmd): whether this host may lead. The wait asks it
// before its first request and once per poll after that (lease's
// WaitOptions.Ready); while it fails, this host takes neither the deputy's
// place nor the lease. A change of readiness is one INFO line.

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/runner"
)

// readiness asks --ready-cmd (or Options.CheckReady) and tells its changes.
type readiness struct {
	log   hclog.Logger
	check func(ctx context.Context) error
	why   string // the latest answer: "" ready (as a host is taken to be before the first)
}

// newReadiness is o's readiness; nil without --ready-cmd.
func newReadiness(log hclog.Logger, o *Options) *readiness {
	check := o.CheckReady
	if check == nil && o.ReadyCmd != "" {
		cfg := runner.HealthConfig{Cmd: o.ReadyCmd, Timeout: o.ReadyTimeout}
		check = func(ctx context.Context) error { return runner.Check(ctx, cfg) }
	}
	if check == nil {
		return nil
	}
	return &readiness{log: log, check: check}
}

// ask runs the check once: "" when ready, else the reason not to lead,
// which a wait that gives up names. Only a change is logged: a host found
// not ready, or ready again; a failure that changes its cause is none.
func (r *readiness) ask(ctx context.Context) string {
	err := r.check(ctx)
	if ctx.Err() != nil {
		return r.why // a stop request ends the wait: no answer
	}
	why, cause, output := "", "", ""
	if err != nil {
		cause = err.Error()
		var ce *runner.CheckError
		if errors.As(err, &ce) {
			cause, output = ce.Why, ce.Output
		}
		why = fmt.Sprintf("not ready (--ready-cmd: %s)", cause)
	}
	switch {
	case why != "" && r.why == "":
		args := []any{"result", cause}
		if output != "" {
			args = append(args, "output", output)
		}
		r.log.Info("not ready: this host takes neither the lease nor the deputy's place until --ready-cmd succeeds", args...)
	case why == "" && r.why != "":
		r.log.Info("ready: --ready-cmd succeeds; this host may take the lease")
	}
	r.why = why
	return why
}
