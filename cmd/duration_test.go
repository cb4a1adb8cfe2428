package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestParseDuration(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		// Go's forms
		{"0", 0, true},
		{"30s", 30 * time.Second, true},
		{"1h30m", 90 * time.Minute, true},
		{"1.5h", 90 * time.Minute, true},
		{"300ms", 300 * time.Millisecond, true},
		{"-1s", -time.Second, true},
		{"1µs", time.Microsecond, true},
		// systemd.time(7)'s spans
		{"90", 90 * time.Second, true},
		{"5min", 5 * time.Minute, true},
		{"1d", day, true},
		{"2w", 14 * day, true},
		{"1h 30min", 90 * time.Minute, true},
		{"2 h", 2 * time.Hour, true},
		{"2hours", 2 * time.Hour, true},
		{"48hr", 48 * time.Hour, true},
		{"55s500ms", 55500 * time.Millisecond, true},
		{"300ms20s 5day", 5*day + 20300*time.Millisecond, true},
		{"1y 12month", 365*day + 6*time.Hour + 12*2629800*time.Second, true},
		{"1M", 2629800 * time.Second, true},
		{"1.5days", 36 * time.Hour, true},
		{".5min", 30 * time.Second, true},
		{"10 seconds", 10 * time.Second, true},
		{"1 minute 1 second", 61 * time.Second, true},
		{"3 usec", 3 * time.Microsecond, true},
		{"7 msec", 7 * time.Millisecond, true},
		{" 5min ", 5 * time.Minute, true},
		{"1weeks", 7 * day, true},
		// refused
		{"", 0, false},
		{" ", 0, false},
		{"soon", 0, false},
		{"5 fortnights", 0, false},
		{"1h30", 0, false}, // 30 what?
		{"30 5min", 0, false},
		{"min", 0, false},
		{"1..5s", 0, false},
		{".", 0, false},
		{"-5min", 0, false}, // a span has no sign
		{"infinity", 0, false},
		{"300y", 0, false},                     // past the largest Duration
		{"99999999999999999999s 1s", 0, false}, // the number overflows
		{"200y 200y", 0, false},                // the sum overflows
	}
	for _, tt := range tests {
		got, err := parseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// FuzzParseDuration: no input panics, none gives a negative span, and
// every Duration reads back from the way Go writes it.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1h 30min", "2 h", "1.5days", "90", "1h30m", "-1s", "1y 12month", "9223372036s", "µs", "1e3s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseTimeSpan(s)
		if err == nil && d < 0 {
			t.Fatalf("parseTimeSpan(%q) = %v, negative", s, d)
		}
		if d, err := parseDuration(s); err == nil {
			if back, err := parseDuration(d.String()); err != nil || back != d {
				t.Fatalf("%q: %v reads back as %v, %v", s, d, back, err)
			}
		}
	})
}

// Every duration flag of every command takes systemd's spans, and shows
// its default as people write it.
func TestEveryDurationFlagTakesSpans(t *testing.T) {
	root := Command()
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if f.Value.Type() != "duration" {
					return
				}
				n++
				if _, ok := f.Value.(durationValue); !ok {
					t.Errorf("%s --%s: a %T, not durationValue", c.CommandPath(), f.Name, f.Value)
				}
				if strings.HasSuffix(f.DefValue, "m0s") {
					t.Errorf("%s --%s: default shown as %q", c.CommandPath(), f.Name, f.DefValue)
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if n < 10 {
		t.Fatalf("only %d duration flags found", n)
	}
}

// The spans reach the options, the environment included.
func TestDurationFlagsReadSpans(t *testing.T) {
	env := map[string]string{"AZURE_STORAGE_ACCOUNT": "mystorageaccount", "LEADERRUN_LEASE_DURATION": "1min"}
	o, err := lineOptions(t, []string{"-l", "x", "-w", "1h 30min", "--once-per", "4min", "--kill-grace", "2 s", "--", "true"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if o.run.Timeout != 90*time.Minute || o.run.OncePer != 4*time.Minute || o.run.Lease.KillGrace != 2*time.Second || o.run.Lease.Duration != time.Minute {
		t.Fatalf("timeout %v, once-per %v, kill-grace %v, lease-duration %v", o.run.Timeout, o.run.OncePer, o.run.Lease.KillGrace, o.run.Lease.Duration)
	}
	env["LEADERRUN_LEASE_DURATION"] = ""
	for _, bad := range []string{"1.5s", "15500ms"} {
		if _, err := lineOptions(t, []string{"-l", "x", "--lease-duration", bad, "--", "true"}, env); err == nil {
			t.Errorf("--lease-duration %s accepted: not whole seconds", bad)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "1m", time.Hour: "1h", 90 * time.Minute: "1h30m", 10 * time.Second: "10s",
		250 * time.Millisecond: "250ms", 0: "0s", time.Hour + time.Second: "1h0m1s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
