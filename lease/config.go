package lease

// config.go: Config, the settings shared by the Elector and its leases,
// their safe bounds, defaults and checks.

import (
	"cmp"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Bounds and defaults.
const (
	MinDuration         = 15 * time.Second // Azure's shortest finite lease
	MaxDuration         = 60 * time.Second // Azure's longest finite lease
	DefaultDuration     = 15 * time.Second
	DefaultPollInterval = 2 * time.Second

	// killMargin: the child must be dead 1 s before the lease could pass
	// on, and SIGKILL gets 500 ms to take effect.
	killMargin      = 1500 * time.Millisecond
	minRetryWindow  = time.Second // left for retries between the first renewal and StopAt
	minPollInterval = 100 * time.Millisecond
	maxIdentityLen  = 256
)

// Config is how an Elector acquires and keeps the lease.
type Config struct {
	// Duration is the lease duration: whole seconds from 15s to 60s; 0
	// means 15s. Infinite leases are refused.
	Duration time.Duration
	// RenewInterval is how often the keeper renews: more than 0 and at
	// most Duration/2; 0 means Duration/3.
	RenewInterval time.Duration
	// KillGrace is the child's grace between the stop signal and SIGKILL;
	// less (StopBudget) when the lease is lost.
	KillGrace time.Duration
	// PollInterval is how often a waiting follower reads the blob's
	// properties, ±20 % jitter; 0 means 2s.
	PollInterval time.Duration
	// Identity names this holder in the metadata: printable ASCII, at most
	// 256 characters. Version is written as leaderrunversion.
	Identity, Version string
	Logger            hclog.Logger
	// Slots is how many holders may hold the lease at once, each on its
	// own slot blob (slots.go): 1 to MaxSlots; 0 means 1. Above 1 the claim
	// records it in each slot, and a contender with another count is refused.
	Slots int
	// Rand, if set, is the source of every random draw of the Elector and
	// its leases (jitter, backoff, the order of the slots tried), so that
	// a test's seed repeats a run; nil: math/rand/v2's global source.
	Rand rand.Source
}

// StopBudget is the time between the stop signal and SIGKILL when the
// keeper loses the lease: KillGrace capped at Duration/3 (5 s for 15 s), so
// that the signal, the grace and SIGKILL fit before the lease can pass on.
// A child stopped for another reason while the keeper still renews may
// get the whole KillGrace. Valid after NewElector.
func (cfg Config) StopBudget() time.Duration { return min(cfg.KillGrace, cfg.Duration/3) }

// Check checks cfg as NewElector does (a *ConfigError if it cannot be
// safe) and returns it with its defaults filled in: the timing a run with
// these settings would keep, for a caller that has no lease to acquire.
func (cfg Config) Check() (Config, error) { return cfg.withDefaults() }

// RenewTiming is what a renewal has under the checked cfg: the window from
// its scheduled send to the stop signal of a lost lease, and the bound of
// one renew try, a third of the window kept within 1 s and 3 s (3.5 s and
// 1.17 s at the default 15 s lease with a KillGrace of 5 s or more).
func (cfg Config) RenewTiming() (window, try time.Duration) {
	return renewTiming(cfg.Duration, cfg.StopBudget(), cfg.RenewInterval)
}

// withDefaults checks cfg and fills its defaults.
func (cfg Config) withDefaults() (Config, error) {
	cfg.Duration = cmp.Or(cfg.Duration, DefaultDuration)
	d := cfg.Duration
	if d < MinDuration || d > MaxDuration || d%time.Second != 0 {
		return cfg, configErr("lease duration", "%s: want whole seconds from 15s to 60s (infinite leases are refused)", d)
	}
	cfg.RenewInterval = cmp.Or(cfg.RenewInterval, d/3)
	if cfg.RenewInterval < time.Second || cfg.RenewInterval > d/2 {
		return cfg, configErr("renew interval", "%s: want at least 1s and at most half the lease duration (%s)", cfg.RenewInterval, d/2)
	}
	if cfg.KillGrace < 0 {
		return cfg, configErr("kill grace", "%s: must not be negative", cfg.KillGrace)
	}
	if window := d - killMargin - cfg.StopBudget() - cfg.RenewInterval; window < minRetryWindow {
		return cfg, configErr("renew interval", "%s leaves %s for retries before the stop deadline: want at least %s", cfg.RenewInterval, window, minRetryWindow)
	}
	cfg.PollInterval = cmp.Or(cfg.PollInterval, DefaultPollInterval)
	if cfg.PollInterval < minPollInterval {
		return cfg, configErr("poll interval", "%s: want at least %s", cfg.PollInterval, minPollInterval)
	}
	if err := checkHeaderValue("identity", cfg.Identity, maxIdentityLen); err != nil {
		return cfg, err
	}
	cfg.Version = cmp.Or(cfg.Version, "unknown")
	if err := checkHeaderValue("version", cfg.Version, 64); err != nil {
		return cfg, err
	}
	cfg.Logger = cmp.Or(cfg.Logger, hclog.NewNullLogger())
	cfg.Slots = cmp.Or(cfg.Slots, 1)
	if cfg.Slots < 1 || cfg.Slots > MaxSlots {
		return cfg, configErr("slots", "%d: want 1 to %d", cfg.Slots, MaxSlots)
	}
	return cfg, nil
}

// checkHeaderValue: metadata travels in HTTP headers.
func checkHeaderValue(field, v string, maxLen int) error {
	if v == "" {
		return configErr(field, "empty")
	}
	if len(v) > maxLen {
		return configErr(field, "longer than %d characters", maxLen)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return configErr(field, "%s: only printable ASCII is allowed", strconv.Quote(v))
		}
	}
	if v[0] == ' ' || v[len(v)-1] == ' ' {
		return configErr(field, "%q: leading or trailing spaces are not allowed", v)
	}
	return nil
}
