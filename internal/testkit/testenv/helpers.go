package testenv

// Small helpers every driver needs: sleeping and polling until a context
// ends, log tails, random names, and the environment of what they start.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"time"
)

// SleepCtx sleeps d or until ctx ends; false if ctx ended.
func SleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// WaitUntil calls cond every interval until it holds (true), the deadline
// passes or ctx ends (false).
func WaitUntil(ctx context.Context, deadline time.Time, every time.Duration, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) || !SleepCtx(ctx, min(every, time.Until(deadline))) {
			return false
		}
	}
}

// RandHex is n random bytes in hex, for unique names.
func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Tail is the last n lines of the file at path; nil when it cannot be read
// or is empty.
func Tail(path string, n int) []string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// LogTail is the end of a log file, to append to an error message: "" when
// there is nothing to show.
func LogTail(path string) string {
	lines := Tail(path, 15)
	if lines == nil {
		return ""
	}
	return "\n" + path + " (last lines):\n  " + strings.Join(lines, "\n  ")
}

// LogHas reports whether the file at path contains s.
func LogHas(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte(s))
}

// BaseEnv is the environment of every process a driver starts: the
// caller's, without anything that would point leaderrun elsewhere (AZURE_*,
// LEADERRUN_*), make it talk to systemd, or send etcdctl to another cluster
// (ETCDCTL_*).
func BaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "AZURE_"), strings.HasPrefix(k, "LEADERRUN_"), strings.HasPrefix(k, "ETCDCTL_"),
			k == "NOTIFY_SOCKET", k == "WATCHDOG_USEC", k == "WATCHDOG_PID":
			continue
		}
		env = append(env, kv)
	}
	return env
}
