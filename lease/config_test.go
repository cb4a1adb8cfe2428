package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidation(t *testing.T) {
	ok := testConfig()
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string // "" = valid
	}{
		{"defaults", func(c *Config) {}, ""},
		{"zero duration means 15s", func(c *Config) { c.Duration = 0 }, ""},
		{"60s", func(c *Config) { c.Duration = 60 * time.Second }, ""},
		{"10s", func(c *Config) { c.Duration = 10 * time.Second }, "lease duration"},
		{"61s", func(c *Config) { c.Duration = 61 * time.Second }, "lease duration"},
		{"15.5s", func(c *Config) { c.Duration = 15500 * time.Millisecond }, "lease duration"},
		{"infinite", func(c *Config) { c.Duration = -1 }, "lease duration"},
		{"renew d/2", func(c *Config) { c.Duration = 20 * time.Second; c.RenewInterval = 10 * time.Second }, ""},
		{"renew > d/2", func(c *Config) { c.RenewInterval = 7501 * time.Millisecond }, "renew interval"},
		{"renew negative", func(c *Config) { c.RenewInterval = -time.Second }, "renew interval"},
		{"renew too fast", func(c *Config) { c.RenewInterval = 10 * time.Millisecond }, "renew interval"},
		{"negative grace", func(c *Config) { c.KillGrace = -1 }, "kill grace"},
		{"zero grace", func(c *Config) { c.KillGrace = 0 }, ""},
		{"poll too fast", func(c *Config) { c.PollInterval = time.Millisecond }, "poll interval"},
		{"no identity", func(c *Config) { c.Identity = "" }, "identity"},
		{"non-ASCII identity", func(c *Config) { c.Identity = "vm-é" }, "identity"},
		{"newline in identity", func(c *Config) { c.Identity = "vm\n1" }, "identity"},
		{"long identity", func(c *Config) { c.Identity = strings.Repeat("x", 257) }, "identity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			e, err := NewElector(&Blob{}, cfg)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				got := e.Config()
				if got.RenewInterval == 0 || got.PollInterval == 0 || got.Duration == 0 || got.Logger == nil {
					t.Errorf("defaults not filled: %+v", got)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("err = %v, want a ConfigError for %s", err, tc.field)
			}
		})
	}
	t.Run("derived", func(t *testing.T) {
		e, err := NewElector(&Blob{}, Config{Duration: 30 * time.Second, KillGrace: 20 * time.Second, Identity: "x"})
		if err != nil {
			t.Fatal(err)
		}
		c := e.Config()
		if c.RenewInterval != 10*time.Second || c.StopBudget() != 10*time.Second || c.PollInterval != 2*time.Second || c.Version != "unknown" {
			t.Errorf("config %+v, stop budget %v", c, c.StopBudget())
		}
	})
	t.Run("wait options", func(t *testing.T) {
		e, err := NewElector(&Blob{}, ok)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []WaitOptions{{Timeout: -1}, {OncePer: -1}} {
			var ce *ConfigError
			if _, err := e.Acquire(context.Background(), w); !errors.As(err, &ce) {
				t.Errorf("%+v: err = %v, want a ConfigError", w, err)
			}
		}
	})
}
