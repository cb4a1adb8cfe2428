package leader

// The head start: COMMAND's guard process, started while the lease is
// still being acquired.

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/runner"
)

// headStart starts COMMAND's guard (runner.Prepare) right before each
// acquire request, so that the guard's start, a whole process's, overlaps
// the storage round trips instead of following them; COMMAND itself starts
// once the lease is held. The guard is discarded when the wait for a held
// lease begins, and when leaderrun ends without running COMMAND.
type headStart struct {
	log      hclog.Logger
	cfg      runner.Config
	prepared *runner.Prepared
	failed   bool // Prepare failed: start from scratch, which reports why
}

func (h *headStart) prepare() {
	if h.prepared != nil || h.failed {
		return
	}
	p, err := runner.Prepare(h.cfg)
	if err != nil {
		// COMMAND was looked up before: removed since, or the guard could
		// not start. start tries again and reports it with the run recorded.
		h.failed = true
		h.log.Debug("no head start for the command", "error", err)
		return
	}
	h.prepared = p
}

func (h *headStart) discard() {
	if h.prepared != nil {
		h.prepared.Discard()
		h.prepared = nil
	}
}

// start starts COMMAND with env and the kill deadline already in force: in
// the prepared guard if there is one and it works, otherwise in a new one.
func (h *headStart) start(env []string, killBy time.Time) (*runner.Process, error) {
	if p := h.prepared; p != nil {
		h.prepared = nil
		err := p.SetKillDeadline(killBy)
		if err == nil {
			var proc *runner.Process
			if proc, err = p.Launch(env); err == nil {
				return proc, nil
			}
		}
		p.Discard()
		h.log.Warn("the command's prepared guard failed; starting it anew", "error", err)
	}
	cfg := h.cfg
	cfg.Env = env
	proc, err := runner.Start(cfg)
	if err != nil {
		return nil, err
	}
	if err := proc.SetKillDeadline(killBy); err != nil {
		h.log.Warn("could not hand the kill deadline to the guard", "error", err)
	}
	return proc, nil
}
