package schedule

import (
	"testing"
	"time"
	_ "time/tzdata" // CRON_TZ zones without the host's zoneinfo
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustParse(t *testing.T, spec string) *Schedule {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParse(t *testing.T) {
	for _, spec := range []string{"*/5 * * * *", "@daily", "@hourly", "CRON_TZ=Europe/Berlin 30 2 * * *", "TZ=America/New_York @weekly"} {
		if _, err := Parse(spec); err != nil {
			t.Errorf("Parse(%q): %v", spec, err)
		}
	}
	for _, spec := range []string{"", "* * * *", "0 * * * * *", "@every 5m", "CRON_TZ=Nowhere/Else * * * * *", "61 * * * *"} {
		if _, err := Parse(spec); err == nil {
			t.Errorf("Parse(%q): no error", spec)
		}
	}
}

func TestDefaultZoneIsUTC(t *testing.T) {
	s := mustParse(t, "0 9 * * *")
	if got, want := s.Latest(at("2026-03-10T12:00:00Z")), at("2026-03-10T09:00:00Z"); !got.Equal(want) {
		t.Errorf("Latest = %s, want %s", got, want)
	}
}

func TestLatest(t *testing.T) {
	s := mustParse(t, "*/5 * * * *")
	for _, c := range []struct{ now, want string }{
		{"2026-03-10T12:07:30Z", "2026-03-10T12:05:00Z"},
		{"2026-03-10T12:05:00Z", "2026-03-10T12:05:00Z"}, // at the occurrence itself
		{"2026-03-10T12:04:59Z", "2026-03-10T12:00:00Z"},
		{"2026-03-10T00:01:00Z", "2026-03-10T00:00:00Z"},
	} {
		if got := s.Latest(at(c.now)); !got.Equal(at(c.want)) {
			t.Errorf("Latest(%s) = %s, want %s", c.now, got, c.want)
		}
	}
	// Far back: a yearly schedule, and one with no occurrence for years.
	if got, want := mustParse(t, "@yearly").Latest(at("2026-11-24T20:00:00Z")), at("2026-01-01T00:00:00Z"); !got.Equal(want) {
		t.Errorf("@yearly: Latest = %s, want %s", got, want)
	}
	if got, want := mustParse(t, "0 0 29 2 *").Latest(at("2026-11-24T20:00:00Z")), at("2024-02-29T00:00:00Z"); !got.Equal(want) {
		t.Errorf("29 February: Latest = %s, want %s", got, want)
	}
}

func TestDecide(t *testing.T) {
	s := mustParse(t, "*/5 * * * *")
	created := at("2026-03-10T11:00:00Z")
	for _, c := range []struct {
		name     string
		now      string
		created  time.Time
		last     string
		deadline time.Duration
		want     Verdict
		occ      string
	}{
		{"due, never run", "2026-03-10T12:05:10Z", created, "", 0, Run, "2026-03-10T12:05:00Z"},
		{"due, the previous one ran", "2026-03-10T12:05:10Z", created, "2026-03-10T12:00:00Z", 0, Run, "2026-03-10T12:05:00Z"},
		{"already started by someone", "2026-03-10T12:06:00Z", created, "2026-03-10T12:05:00Z", 0, Started, "2026-03-10T12:05:00Z"},
		// First use after the occurrence: the fleet was down at 12:05 and
		// comes back at 12:08; the 12:05 run happens once, late.
		{"first use after the occurrence", "2026-03-10T12:08:40Z", created, "2026-03-10T11:55:00Z", 0, Run, "2026-03-10T12:05:00Z"},
		// Down across several: only the latest runs.
		{"only the latest of several missed", "2026-03-10T12:31:00Z", created, "2026-03-10T11:55:00Z", 0, Run, "2026-03-10T12:30:00Z"},
		// The blob made after the occurrence: not due, as a new CronJob.
		{"before the blob existed", "2026-03-10T12:06:00Z", at("2026-03-10T12:05:30Z"), "", 0, NotDue, "2026-03-10T12:05:00Z"},
		{"the blob made at the occurrence", "2026-03-10T12:06:00Z", at("2026-03-10T12:05:00Z"), "", 0, NotDue, "2026-03-10T12:05:00Z"},
		{"the blob made before", "2026-03-10T12:06:00Z", at("2026-03-10T12:04:59Z"), "", 0, Run, "2026-03-10T12:05:00Z"},
		{"creation unknown", "2026-03-10T12:06:00Z", time.Time{}, "", 0, Run, "2026-03-10T12:05:00Z"},
		// Deadline edge: exactly the deadline old still runs.
		{"at the deadline", "2026-03-10T12:06:00Z", created, "", time.Minute, Run, "2026-03-10T12:05:00Z"},
		{"past the deadline", "2026-03-10T12:06:01Z", created, "", time.Minute, Missed, "2026-03-10T12:05:00Z"},
		{"past the deadline but started", "2026-03-10T12:06:01Z", created, "2026-03-10T12:05:00Z", time.Minute, Started, "2026-03-10T12:05:00Z"},
		// An earlier run still holding the lease at the next occurrence:
		// the occurrence is due (the caller finds the lease held and
		// exits quietly; the next invocation tries again).
		{"an earlier run still holding", "2026-03-10T12:10:20Z", created, "2026-03-10T12:05:00Z", 0, Run, "2026-03-10T12:10:00Z"},
	} {
		var last time.Time
		if c.last != "" {
			last = at(c.last)
		}
		d := s.Decide(at(c.now), c.created, last, c.deadline)
		if d.Verdict != c.want || !d.Occurrence.Equal(at(c.occ)) {
			t.Errorf("%s: %v %s, want %v %s", c.name, d.Verdict, d.Occurrence, c.want, c.occ)
		}
	}
}

// Decide is on every scheduled invocation's read: its cost, for a minutely
// and a daily schedule in UTC, a daily one in a zone with DST, and 29
// February (the longest search).
func BenchmarkDecide(b *testing.B) {
	now, created := at("2026-11-01T06:45:00Z"), at("2026-01-01T00:00:00Z")
	for _, spec := range []string{"* * * * *", "0 3 * * *", "CRON_TZ=America/New_York 30 1 * * *", "CRON_TZ=Europe/Berlin */30 * * * *", "0 0 29 2 *"} {
		s, err := Parse(spec)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(spec, func(b *testing.B) {
			for b.Loop() {
				s.Decide(now, created, time.Time{}, 0)
			}
		})
	}
}
