package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/schedule"
)

func TestScheduleUsage(t *testing.T) {
	t.Setenv("LEADERRUN_LEASE", "")
	t.Setenv("LEADERRUN_SCHEDULE", "")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--schedule", "* * * *"}, "invalid --schedule"},
		{[]string{"--schedule", "@every 5m"}, "@every"},
		{[]string{"--schedule", "*/5 * * * *", "--once-per", "4m"}, "--once-per cannot"},
		{[]string{"--schedule", "*/5 * * * *", "--once"}, "--once cannot"},
		{[]string{"--schedule", "*/5 * * * *", "--once-per-host"}, "--once-per-host cannot"},
		{[]string{"--schedule", "*/5 * * * *", "--starting-deadline", "-1m"}, "--starting-deadline"},
		{[]string{"--starting-deadline", "1m"}, "needs --schedule"},
		{[]string{"--schedule", "@hourly", "--slots", "2"}, "--slots 2 cannot"},
	} {
		args := append([]string{"-l", "x"}, c.args...)
		code, _, stderr := run(t, append(args, "--", "true")...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 64 and %q", c.args, code, stderr, c.want)
		}
	}
}

// A missed occurrence is one WARNING line, even under -q; nothing due and
// an occurrence already started are silent but for debug.
func TestScheduleSkipLines(t *testing.T) {
	s, err := schedule.Parse("*/5 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	o := &scheduleOptions{spec: "*/5 * * * *", deadline: time.Minute, s: s}
	occ := time.Date(2026, 3, 10, 12, 5, 0, 0, time.UTC)
	for _, c := range []struct {
		reason lease.SkipReason
		lines  int
	}{
		{lease.SkipMissed, 1},
		{lease.SkipStarted, 0},
		{lease.SkipNotDue, 0},
	} {
		var buf bytes.Buffer
		log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Warn})
		if !logScheduleSkip(log, o, &lease.SkipError{Reason: c.reason, Occurrence: occ}) {
			t.Fatalf("%v: not a schedule skip", c.reason)
		}
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
	if logScheduleSkip(hclog.NewNullLogger(), o, &lease.SkipError{Reason: lease.SkipOncePer}) {
		t.Error("a --once-per skip taken for a schedule's")
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

func TestViewSchedule(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 16, 0, 0, time.UTC)
	p := &lease.Properties{Schedule: "*/5 * * * *", Occurrence: time.Date(2026, 3, 10, 12, 15, 0, 0, time.UTC)}
	v, ok := viewSchedule(p, now)
	if !ok || !v.missed.IsZero() || !v.next.Equal(time.Date(2026, 3, 10, 12, 20, 0, 0, time.UTC)) {
		t.Errorf("on time: %+v", v)
	}
	// 12:05 started; 12:10 never did, and 12:15 is due too.
	p.Occurrence = time.Date(2026, 3, 10, 12, 5, 0, 0, time.UTC)
	if v, _ := viewSchedule(p, now); !v.missed.Equal(time.Date(2026, 3, 10, 12, 10, 0, 0, time.UTC)) {
		t.Errorf("missed: %+v", v)
	}
	vv, _ := viewSchedule(p, now)
	if res := decideCheck(checkInput{Now: now, MaxAge: time.Hour, Schedule: &vv}); res.State != stateCritical || !strings.Contains(res.Line, "never started") {
		t.Errorf("check: %v %q", res.State, res.Line)
	}
	if _, ok := viewSchedule(&lease.Properties{}, now); ok {
		t.Error("an unscheduled lease shows a schedule")
	}
}
