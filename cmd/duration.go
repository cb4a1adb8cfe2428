package cmd

// Durations as people write them: every duration flag takes Go's forms
// (1h30m, 1.5h, 300ms) and systemd's time spans (5min, 1d, 2w, 1h 30min,
// 2 h, 90), as systemd.time(7) defines them, through one flag value.

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// durationValue is the value of every duration flag: it reads what
// parseDuration reads and hands the result to pflag's own duration value,
// which holds the variable. Commands define duration flags with
// fs.DurationVar as usual; acceptTimeSpans puts this value in front of each.
type durationValue struct{ pflag.Value }

func (d durationValue) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	return d.Value.Set(v.String()) // Duration.String reads back exactly
}

func (d durationValue) Type() string { return "duration" }

// String is the value as help shows a default: "1m", not pflag's "1m0s".
func (d durationValue) String() string {
	v, err := time.ParseDuration(d.Value.String())
	if err != nil {
		return d.Value.String()
	}
	return formatDuration(v)
}

// acceptTimeSpans makes every duration flag of c and its commands take
// systemd's time spans too (durationValue).
func acceptTimeSpans(c *cobra.Command) {
	spanFlags(c.Flags())
	spanFlags(c.PersistentFlags())
	for _, sub := range c.Commands() {
		acceptTimeSpans(sub)
	}
}

// spanFlags puts durationValue in front of every duration flag of fs.
func spanFlags(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if _, done := f.Value.(durationValue); !done && f.Value.Type() == "duration" {
			f.Value = durationValue{f.Value}
			f.DefValue = f.Value.String()
		}
	})
}

// formatDuration is d as Go writes it, without zero trailing units:
// "1m", "1h30m", "10s", "250ms".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// errDuration explains both forms; pflag names the flag and the value.
var errDuration = errors.New("use Go's form (1h30m, 90s) or a systemd time span (5min, 1h 30min, 2d)")

// parseDuration reads s as time.ParseDuration does, or else as a systemd
// time span (parseTimeSpan).
func parseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	return parseTimeSpan(s)
}

// The units of systemd.time(7). A month is 30.44 days and a year 365.25
// days, as systemd counts them.
var spanUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "nsec": time.Nanosecond,
	"us": time.Microsecond, "usec": time.Microsecond, "µs": time.Microsecond, "μs": time.Microsecond,
	"ms": time.Millisecond, "msec": time.Millisecond,
	"s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
	"M": 2629800 * time.Second, "month": 2629800 * time.Second, "months": 2629800 * time.Second,
	"y": 31557600 * time.Second, "year": 31557600 * time.Second, "years": 31557600 * time.Second,
}

// parseTimeSpan reads a systemd time span: values, each a decimal number
// (with an optional fraction) and a unit, added up; spaces may stand
// between values and between a number and its unit ("1h 30min", "2 h",
// "55s500ms"). A lone number without a unit is seconds ("90"), as in
// systemd. There is no sign, and no "infinity": a flag that means "no
// limit" says which value does.
func parseTimeSpan(s string) (time.Duration, error) {
	rest := strings.TrimSpace(s)
	if rest == "" {
		return 0, fmt.Errorf("empty duration: %w", errDuration)
	}
	var total time.Duration
	for n := 0; rest != ""; n++ {
		num := rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789."))]
		if num == "" || num == "." || strings.Count(num, ".") > 1 {
			return 0, errDuration
		}
		rest = strings.TrimLeft(rest[len(num):], " ")
		unit := strings.TrimLeftFunc(rest, unicode.IsLetter)
		unit = rest[:len(rest)-len(unit)]
		rest = strings.TrimLeft(rest[len(unit):], " ")
		scale := time.Second
		if unit != "" {
			var ok bool
			if scale, ok = spanUnits[unit]; !ok {
				return 0, fmt.Errorf("unknown unit %q: %w", unit, errDuration)
			}
		} else if n > 0 || rest != "" {
			return 0, fmt.Errorf("%q has no unit: %w", num, errDuration)
		}
		d, ok := scaled(num, scale)
		if !ok || total > math.MaxInt64-d {
			return 0, fmt.Errorf("%q is too long (at most %s)", s, formatDuration(math.MaxInt64))
		}
		total += d
	}
	return total, nil
}

// scaled is the decimal num ("1", "1.5", ".5", "2.") times scale; ok is
// false when it does not fit in a Duration.
func scaled(num string, scale time.Duration) (d time.Duration, ok bool) {
	whole, frac, _ := strings.Cut(num, ".")
	var w int64
	for _, c := range whole {
		if w > (math.MaxInt64-9)/10 {
			return 0, false
		}
		w = w*10 + int64(c-'0')
	}
	if w > math.MaxInt64/int64(scale) {
		return 0, false
	}
	d = time.Duration(w) * scale
	// The fraction, digit by digit, while a digit still counts.
	for unit := int64(scale) / 10; unit > 0 && frac != ""; unit /= 10 {
		d += time.Duration(int64(frac[0]-'0') * unit)
		frac = frac[1:]
	}
	return d, d >= 0
}
