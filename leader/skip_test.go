package leader

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/schedule"
)

// A missed occurrence is one WARNING line, even under -q; nothing due and
// an occurrence already started are silent but for debug.
func TestScheduleSkipLines(t *testing.T) {
	s, err := schedule.Parse("*/5 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	o := &Options{Schedule: s, StartingDeadline: time.Minute}
	occ := time.Date(2026, 3, 10, 12, 5, 0, 0, time.UTC)
	for _, c := range []struct {
		reason lease.SkipReason
		lines  int
	}{
		{lease.SkipMissed, 1},
		{lease.SkipStarted, 0},
		{lease.SkipNotDue, 0},
		{lease.SkipOncePer, 0}, // info: quiet under -q
	} {
		var buf bytes.Buffer
		log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Warn})
		logSkip(log, o, &lease.SkipError{Reason: c.reason, Occurrence: occ})
		out := strings.TrimSpace(buf.String())
		n := 0
		if out != "" {
			n = len(strings.Split(out, "\n"))
		}
		if n != c.lines {
			t.Errorf("%v: %d lines %q, want %d", c.reason, n, out, c.lines)
		}
		if c.lines == 1 && (!strings.Contains(out, "[WARN]") || !strings.Contains(out, "2026-03-10T12:05:00Z")) {
			t.Errorf("missed: %q, want a warning naming the occurrence", out)
		}
	}
}

// The decision as the lease asks it.
func TestLeaseSchedule(t *testing.T) {
	s, _ := schedule.Parse("*/5 * * * *")
	ls := leaseSchedule{s: s, deadline: time.Minute}
	now := time.Date(2026, 3, 10, 12, 5, 30, 0, time.UTC)
	created := now.Add(-time.Hour)
	if occ, skip := ls.Due(now, created, time.Time{}); skip != nil || !occ.Equal(now.Truncate(time.Minute)) {
		t.Errorf("due: %s %v", occ, skip)
	}
	if _, skip := ls.Due(now, created, now.Truncate(time.Minute)); skip == nil || skip.Reason != lease.SkipStarted {
		t.Errorf("started: %v", skip)
	}
	if _, skip := ls.Due(now.Add(time.Minute), created, time.Time{}); skip == nil || skip.Reason != lease.SkipMissed {
		t.Errorf("missed: %v", skip)
	}
	if _, skip := ls.Due(now, now, time.Time{}); skip == nil || skip.Reason != lease.SkipNotDue {
		t.Errorf("before the blob: %v", skip)
	}
}
