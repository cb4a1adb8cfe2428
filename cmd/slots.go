package cmd

// Slots and rolling work on the run command: --slots N (up to N holders at
// once, lease/slots.go), --once (one successful run for the whole fleet) and
// --once-per-host (one successful run per host), and the done marker a run
// that succeeded writes before its release.

import (
	"github.com/spf13/pflag"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
)

func (o *runOptions) addSlotFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.run.Lease.Slots, "slots", 1, "up to N holders run COMMAND at once, each on its own slot (1 to 50; LEADERRUN_SLOT tells COMMAND which); every host must give the same N")
	fs.BoolVar(&o.run.Once, "once", false, "skip (exit 0) if any host already completed a run with status 0 under this lease; a failed run lets the next one try (not with --slots > 1: it runs COMMAND once for the fleet)")
	fs.BoolVar(&o.oncePerHost, "once-per-host", false, "skip (exit 0) if this host (--identity, else the hostname) already completed a run with status 0 under this lease; a failed run does not count")
}

// completeSlots checks --slots; host is --identity as given (empty: none).
func (o *runOptions) completeSlots(host string) error {
	if n := o.run.Lease.Slots; n < 1 || n > lease.MaxSlots {
		return exit.Usagef("invalid --slots %d: use 1 to %d", n, lease.MaxSlots)
	}
	if o.oncePerHost {
		if host == "" {
			host = hostname()
		}
		o.run.OncePerHost = host
	}
	return nil
}
