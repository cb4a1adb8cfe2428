package main

import (
	"fmt"
	"slices"
	"time"
)

// sample is a set of measured durations.
type sample []time.Duration

// q is the nearest-rank quantile p (0–1) of s; 0 when s is empty.
func (s sample) q(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	i := int(p*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func (s sample) p50() time.Duration { return s.q(0.5) }
func (s sample) p95() time.Duration { return s.q(0.95) }

func (s sample) max() time.Duration {
	if len(s) == 0 {
		return 0
	}
	return slices.Max(s)
}

// fd formats a duration for the tables: 0.42 ms, 26.4 ms, 312 ms, 1.04 s,
// 12.9 s.
func fd(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case d < 0:
		return "−" + fd(-d)
	case ms < 1:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 100:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 10000:
		return fmt.Sprintf("%.2f s", ms/1000)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}

// fq formats a sample as "p50 / p95 (n)".
func fq(s sample) string {
	if len(s) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s / %s", fd(s.p50()), fd(s.p95()))
}

// ratio formats a/b as "0.93×".
func ratio(a, b time.Duration) string {
	if a <= 0 || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

// fmb formats kB as MB with one decimal.
func fmb(kb int64) string { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }

// fcount formats a rate with a sensible number of digits.
func fcount(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 1000:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%s", groupThousands(int64(v+0.5)))
}

func groupThousands(n int64) string {
	s := fmt.Sprint(n)
	out := ""
	for len(s) > 3 {
		out = "," + s[len(s)-3:] + out
		s = s[:len(s)-3]
	}
	return s + out
}

// usd formats dollars with cents, or more digits below a cent.
func usd(v float64) string {
	if v < 0.01 && v > 0 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}
