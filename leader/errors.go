package leader

// Lease errors as exit statuses, each with the one line that says why.

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/runner"
)

// StorageExit maps an error from the lease package to leaderrun's exit
// status: a configuration it refuses is a usage error (64), anything else is
// storage that is unreachable, unauthorized or refused (69).
func StorageExit(err error) error {
	var ce *lease.ConfigError
	if errors.As(err, &ce) {
		return exit.With(exit.Usage, err)
	}
	return exit.With(exit.Unavailable, err)
}

// acquireExit maps what ended the wait for the lease.
func acquireExit(err error, sig syscall.Signal, o *Options) error {
	name := o.Client.Name()
	var held *lease.HeldError
	switch {
	case sig != 0 && errors.Is(err, context.Canceled):
		return exit.With(exit.SignalBase+int(sig), fmt.Errorf("%s while waiting for lease %q; nothing ran", signalName(sig), name))
	case errors.As(err, &held):
		why := "--no-wait"
		if !o.NoWait {
			why = fmt.Sprintf("--timeout %s passed", o.Timeout)
		}
		if held.Reason != "" { // kept off by a pause or a scheduled event
			return exit.With(o.ConflictCode, fmt.Errorf("lease %q not acquired: %s (%s)", name, held.Reason, why))
		}
		return exit.With(o.ConflictCode, fmt.Errorf("lease %q is held by %s; not acquired (%s)", name, heldText(held, o.Lease.Identity), why))
	}
	return StorageExit(err)
}

// heldText names the holder of a lease found held, as far as it is known.
// The metadata may predate the lease (a new holder writes its name a round
// trip after its acquire): then, or when it names this very identity, which
// does not hold the lease, the holder is not known yet.
func heldText(held *lease.HeldError, self string) string {
	holder := held.Holder
	switch {
	case held.Stale:
		if holder == "" {
			holder = "no holder"
		}
		return fmt.Sprintf("a holder not known yet (the metadata still names %s, whose run has ended)", holder)
	case holder != "" && holder == self:
		return fmt.Sprintf("a holder not known yet (the metadata names this identity, %s, from an earlier term)", self)
	case holder == "":
		holder = "another holder"
	}
	if held.Since.IsZero() {
		return holder
	}
	return holder + " since " + rfc3339(held.Since)
}

// execCode is the exit status for a COMMAND that cannot be started (its
// *runner.ExecError): 127 not found, 126 not executable.
func execCode(err error) int {
	var ee *runner.ExecError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return exit.NotExec
}
