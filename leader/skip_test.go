package leader

import (
	"bytes"
	"strconv"
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
	props := func(now, created, last time.Time) *lease.Properties {
		md := map[string]string{}
		if !last.IsZero() {
			md["occurrence"] = last.Format(time.RFC3339)
		}
		p := lease.PropertiesOf(lease.StateAvailable, md, now)
		p.Created = created
		return p
	}
	if d, skip := ls.Due(props(now, created, time.Time{})); skip != nil || !d.Occurrence.Equal(now.Truncate(time.Minute)) || d.Attempt != 1 {
		t.Errorf("due: %+v %v", d, skip)
	}
	if _, skip := ls.Due(props(now, created, now.Truncate(time.Minute))); skip == nil || skip.Reason != lease.SkipStarted {
		t.Errorf("started: %v", skip)
	}
	if _, skip := ls.Due(props(now.Add(time.Minute), created, time.Time{})); skip == nil || skip.Reason != lease.SkipMissed {
		t.Errorf("missed: %v", skip)
	}
	if _, skip := ls.Due(props(now, now, time.Time{})); skip == nil || skip.Reason != lease.SkipNotDue {
		t.Errorf("before the blob: %v", skip)
	}
	// Two occurrences in between never started.
	if d, skip := ls.Due(props(now, created, now.Add(-15*time.Minute).Truncate(time.Minute))); skip != nil || d.Missed != 2 {
		t.Errorf("missed two: %+v %v", d, skip)
	}
}

// What the lease records of the attempt last started, as the retry
// decision reads it: a failure retried after the delay, a vanished holder
// found and recorded, a success or a running attempt left alone.
func TestLeaseScheduleRetries(t *testing.T) {
	s, _ := schedule.Parse("0 3 * * *")
	ls := leaseSchedule{s: s, retries: schedule.Retries{Max: 2, Delay: time.Minute}}
	occ := time.Date(2026, 3, 10, 3, 0, 0, 0, time.UTC)
	rfc := func(t time.Time) string { return t.Format(time.RFC3339) }
	base := func(attempt string) map[string]string {
		return map[string]string{"occurrence": rfc(occ), "attempt": attempt, "term": "7", "holder": "vm-1",
			"lastrunholder": "vm-1", "lastrunterm": "7", "lastrunstart": rfc(occ.Add(10 * time.Second)),
			"cause7": "retry," + attempt + "," + strconv.FormatInt(occ.Unix(), 10) + ",3,,"}
	}
	ended := func(md map[string]string, code string, end time.Time) map[string]string {
		md["lastexit"], md["lastrunend"] = code, rfc(end)
		return md
	}
	for _, c := range []struct {
		name   string
		state  lease.State
		md     map[string]string
		now    time.Time
		skip   lease.SkipReason // -1: due
		due    lease.Due
		retry  time.Time
		foundd bool
	}{
		{"failed, delay passed: attempt 3, missed carried", lease.StateAvailable, ended(base("2"), "1", occ.Add(time.Minute)), occ.Add(2 * time.Minute),
			-1, lease.Due{Occurrence: occ, Attempt: 3, Missed: 3}, time.Time{}, false},
		{"failed, before the delay", lease.StateAvailable, ended(base("2"), "1", occ.Add(time.Minute)), occ.Add(90 * time.Second),
			lease.SkipRetryLater, lease.Due{}, occ.Add(2 * time.Minute), false},
		{"failed three times", lease.StateAvailable, ended(base("3"), "1", occ.Add(time.Minute)), occ.Add(time.Hour),
			lease.SkipRetriesDone, lease.Due{}, time.Time{}, false},
		{"succeeded", lease.StateAvailable, ended(base("2"), "0", occ.Add(time.Minute)), occ.Add(time.Hour),
			lease.SkipStarted, lease.Due{}, time.Time{}, false},
		{"running", lease.StateLeased, base("1"), occ.Add(time.Hour),
			lease.SkipStarted, lease.Due{}, time.Time{}, false},
		{"vanished, not recorded: record it", lease.StateAvailable, base("1"), occ.Add(time.Hour),
			-1, lease.Due{Occurrence: occ, Attempt: 1, Missed: -1, FoundLost: true, RetryAt: occ.Add(time.Hour + time.Minute)}, time.Time{}, true},
		{"vanished, recorded a delay ago", lease.StateAvailable, func() map[string]string {
			md := base("1")
			md["lostat"] = "7," + rfc(occ.Add(time.Hour))
			return md
		}(), occ.Add(time.Hour + time.Minute), -1, lease.Due{Occurrence: occ, Attempt: 2, Missed: 3}, time.Time{}, false},
		{"vanished, recorded for another term", lease.StateAvailable, func() map[string]string {
			md := base("1")
			md["lostat"] = "6," + rfc(occ.Add(time.Hour))
			return md
		}(), occ.Add(time.Hour + time.Minute), -1, lease.Due{Occurrence: occ, Attempt: 1, Missed: -1, FoundLost: true, RetryAt: occ.Add(time.Hour + 2*time.Minute)}, time.Time{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, skip := ls.Due(lease.PropertiesOf(c.state, c.md, c.now))
			if c.skip < 0 {
				if skip != nil || d != c.due {
					t.Errorf("Due = %+v, %v; want %+v", d, skip, c.due)
				}
				return
			}
			if skip == nil || skip.Reason != c.skip || !skip.RetryAt.Equal(c.retry) {
				t.Errorf("Due = %+v, %v; want skip %v retry at %s", d, skip, c.skip, c.retry)
			}
		})
	}
}
