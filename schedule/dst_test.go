package schedule

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// occurrences lists the occurrences after from, n of them.
func occurrences(s *Schedule, from time.Time, n int) []time.Time {
	var out []time.Time
	for t := from; len(out) < n; {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

func times(ss ...string) []time.Time {
	out := make([]time.Time, len(ss))
	for i, s := range ss {
		out[i] = at(s)
	}
	return out
}

// Occurrences across the changes of 2026, by Vixie cron's rule (the package
// comment). New York: EST (−5) to EDT (−4) at 2026-03-08 07:00Z (02:00 EST
// becomes 03:00 EDT), back at 2026-11-01 06:00Z (02:00 EDT becomes 01:00
// EST). Berlin: CET (+1) to CEST (+2) at 2026-03-29 01:00Z (02:00 becomes
// 03:00), back at 2026-10-25 01:00Z (03:00 becomes 02:00). Lord Howe:
// +11 to +10:30 at 2026-04-04 15:00Z (02:00 becomes 01:30), back to +11 at
// 2026-10-03 15:30Z (02:00 becomes 02:30). Each list runs into the day
// after.
func TestOccurrencesAcrossDST(t *testing.T) {
	for _, c := range []struct {
		name, spec, from string
		want             []time.Time
	}{
		// Fixed-time: a repeated wall time once, at its first instant.
		{"New York fall back, daily 01:30 once", "CRON_TZ=America/New_York 30 1 * * *", "2026-10-31T12:00:00Z",
			times("2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z")},
		{"Berlin fall back, daily 02:30 once", "CRON_TZ=Europe/Berlin 30 2 * * *", "2026-10-24T12:00:00Z",
			times("2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z")},
		{"Berlin fall back, hourly as named hours", "CRON_TZ=Europe/Berlin 0 0-23 * * *", "2026-10-24T23:30:00Z",
			times("2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z")},
		{"Lord Howe fall back, daily 01:30 once", "CRON_TZ=Australia/Lord_Howe 30 1 * * *", "2026-04-04T00:00:00Z",
			times("2026-04-04T14:30:00Z", "2026-04-05T15:00:00Z")},
		// Fixed-time: a skipped wall time at the first instant after the gap.
		{"New York spring forward, daily 02:30 at 03:00 EDT", "CRON_TZ=America/New_York 30 2 * * *", "2026-03-07T12:00:00Z",
			times("2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z")},
		{"Berlin spring forward, daily 02:30 at 03:00 CEST", "CRON_TZ=Europe/Berlin 30 2 * * *", "2026-03-28T12:00:00Z",
			times("2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z")},
		{"Berlin spring forward, two wall times in the gap run once", "CRON_TZ=Europe/Berlin 0,30 2 * * *", "2026-03-28T12:00:00Z",
			times("2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T00:30:00Z")},
		{"Lord Howe spring forward, daily 02:15 at 02:30", "CRON_TZ=Australia/Lord_Howe 15 2 * * *", "2026-10-02T12:00:00Z",
			times("2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z")},
		// Fixed-time wall times the changes do not touch.
		{"New York spring forward, daily 01:30", "CRON_TZ=America/New_York 30 1 * * *", "2026-03-07T12:00:00Z",
			times("2026-03-08T06:30:00Z", "2026-03-09T05:30:00Z")},
		{"New York fall back, @daily", "CRON_TZ=America/New_York @daily", "2026-10-31T12:00:00Z",
			times("2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z")},
		// Wildcard: the clock as it reads, every hour and half hour.
		{"New York fall back, hourly every hour", "CRON_TZ=America/New_York 0 * * * *", "2026-11-01T04:00:00Z",
			times("2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z")},
		{"New York spring forward, @hourly", "CRON_TZ=America/New_York @hourly", "2026-03-08T06:00:00Z",
			times("2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z")},
		{"Berlin fall back, */30", "CRON_TZ=Europe/Berlin */30 * * * *", "2026-10-25T00:00:00Z",
			times("2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z")},
		{"Berlin spring forward, */30", "CRON_TZ=Europe/Berlin */30 * * * *", "2026-03-29T00:00:00Z",
			times("2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z")},
		{"Berlin spring forward, */30 in the skipped hour only", "CRON_TZ=Europe/Berlin */30 2 * * *", "2026-03-28T12:00:00Z",
			times("2026-03-30T00:00:00Z", "2026-03-30T00:30:00Z")},
		{"Lord Howe fall back, */30", "CRON_TZ=Australia/Lord_Howe */30 * * * *", "2026-04-04T14:00:00Z",
			times("2026-04-04T14:30:00Z", "2026-04-04T15:00:00Z", "2026-04-04T15:30:00Z")},
		{"Lord Howe spring forward, */30", "CRON_TZ=Australia/Lord_Howe */30 * * * *", "2026-10-03T15:00:00Z",
			times("2026-10-03T15:30:00Z", "2026-10-03T16:00:00Z")},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustParse(t, c.spec)
			if got := occurrences(s, at(c.from), len(c.want)); !slices.EqualFunc(got, c.want, time.Time.Equal) {
				t.Errorf("occurrences after %s:\n got %v\nwant %v", c.from, got, c.want)
			}
			// Latest at each occurrence, and a second before the next,
			// agrees with Next.
			for i, w := range c.want {
				if got := s.Latest(w); !got.Equal(w) {
					t.Errorf("Latest(%s) = %s, want itself", w, got)
				}
				if i+1 < len(c.want) {
					if got := s.Latest(c.want[i+1].Add(-time.Second)); !got.Equal(w) {
						t.Errorf("Latest(a second before %s) = %s, want %s", c.want[i+1], got, w)
					}
				}
			}
		})
	}
}

// Decide across the changes: the second 01:30 of a fall-back night is the
// occurrence already started; a wall time in the gap runs after it.
func TestDecideAcrossDST(t *testing.T) {
	ny1, ny2 := "CRON_TZ=America/New_York 30 1 * * *", "CRON_TZ=America/New_York 30 2 * * *"
	berlin := "CRON_TZ=Europe/Berlin 30 2 * * *"
	created := at("2026-01-01T00:00:00Z")
	for _, c := range []struct {
		name, spec, now, last string
		deadline              time.Duration
		want                  Verdict
		occ                   string
	}{
		{"New York, the first 01:30", ny1, "2026-11-01T05:31:00Z", "2026-10-31T05:30:00Z", 0, Run, "2026-11-01T05:30:00Z"},
		{"New York, the second 01:30 is the same occurrence", ny1, "2026-11-01T06:31:00Z", "2026-11-01T05:30:00Z", 0, Started, "2026-11-01T05:30:00Z"},
		{"New York, a record of the second 01:30 by an older version", ny1, "2026-11-01T07:00:00Z", "2026-11-01T06:30:00Z", 0, Started, "2026-11-01T05:30:00Z"},
		{"New York, the day after fall back", ny1, "2026-11-02T06:31:00Z", "2026-11-01T05:30:00Z", 0, Run, "2026-11-02T06:30:00Z"},
		{"New York, 02:30 skipped runs at 03:00 EDT", ny2, "2026-03-08T07:00:00Z", "2026-03-07T07:30:00Z", 0, Run, "2026-03-08T07:00:00Z"},
		{"New York, 02:30 skipped, before the gap ends", ny2, "2026-03-08T06:59:59Z", "2026-03-07T07:30:00Z", 0, Started, "2026-03-07T07:30:00Z"},
		{"New York, 02:30 skipped, later that day", ny2, "2026-03-08T15:00:00Z", "2026-03-07T07:30:00Z", 0, Run, "2026-03-08T07:00:00Z"},
		{"New York, 02:30 skipped, started", ny2, "2026-03-08T15:00:00Z", "2026-03-08T07:00:00Z", 0, Started, "2026-03-08T07:00:00Z"},
		{"New York, 02:30 skipped, past the deadline", ny2, "2026-03-08T09:00:01Z", "2026-03-07T07:30:00Z", 2 * time.Hour, Missed, "2026-03-08T07:00:00Z"},
		{"New York, the day after spring forward", ny2, "2026-03-09T06:31:00Z", "2026-03-08T07:00:00Z", 0, Run, "2026-03-09T06:30:00Z"},
		{"Berlin, 02:30 skipped runs at 03:00 CEST", berlin, "2026-03-29T01:00:30Z", "2026-03-28T01:30:00Z", 0, Run, "2026-03-29T01:00:00Z"},
		{"Berlin, the second 02:30 is the same occurrence", berlin, "2026-10-25T01:31:00Z", "2026-10-25T00:30:00Z", 0, Started, "2026-10-25T00:30:00Z"},
		{"Berlin, the day after fall back", berlin, "2026-10-26T01:30:00Z", "2026-10-25T00:30:00Z", 0, Run, "2026-10-26T01:30:00Z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := mustParse(t, c.spec).Decide(at(c.now), created, at(c.last), c.deadline)
			if d.Verdict != c.want || !d.Occurrence.Equal(at(c.occ)) {
				t.Errorf("Decide at %s, last %s: %v %s, want %v %s", c.now, c.last, d.Verdict, d.Occurrence, c.want, c.occ)
			}
		})
	}
}

func TestPrevious(t *testing.T) {
	for _, c := range []struct{ spec, occ, want string }{
		{"CRON_TZ=America/New_York 30 1 * * *", "2026-11-02T06:30:00Z", "2026-11-01T05:30:00Z"},
		{"CRON_TZ=America/New_York 30 1 * * *", "2026-11-01T05:30:00Z", "2026-10-31T05:30:00Z"},
		{"CRON_TZ=Europe/Berlin 30 2 * * *", "2026-03-30T00:30:00Z", "2026-03-29T01:00:00Z"},
		{"CRON_TZ=Europe/Berlin 30 2 * * *", "2026-03-29T01:00:00Z", "2026-03-28T01:30:00Z"},
		{"CRON_TZ=America/New_York 0 * * * *", "2026-11-01T07:00:00Z", "2026-11-01T06:00:00Z"},
		{"*/5 * * * *", "2026-03-10T12:00:00Z", "2026-03-10T11:55:00Z"},
		{"*/5 * * * *", "2026-03-10T12:02:00Z", "2026-03-10T12:00:00Z"}, // not an occurrence: the one before it
		{"0 0 29 2 *", "2028-02-29T00:00:00Z", "2024-02-29T00:00:00Z"},
	} {
		if got := mustParse(t, c.spec).Previous(at(c.occ)); !got.Equal(at(c.want)) {
			t.Errorf("%s: Previous(%s) = %s, want %s", c.spec, c.occ, got, c.want)
		}
	}
	if got := mustParse(t, "@yearly").Previous(at("2026-01-01T00:00:00Z").AddDate(-6, 0, 0)); !got.Equal(at("2019-01-01T00:00:00Z")) {
		t.Errorf("@yearly: Previous = %s", got)
	}
}

func TestBetween(t *testing.T) {
	for _, c := range []struct {
		spec, a, b string
		want       int
	}{
		{"CRON_TZ=America/New_York 30 1 * * *", "2026-10-31T05:30:00Z", "2026-11-02T06:30:00Z", 1}, // the 01:30 repeated counts once
		{"CRON_TZ=Europe/Berlin 30 2 * * *", "2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z", 1},    // the skipped 02:30 counts
		{"CRON_TZ=America/New_York 0 * * * *", "2026-11-01T04:00:00Z", "2026-11-01T08:00:00Z", 3},  // hourly: every hour
		{"*/5 * * * *", "2026-03-10T12:00:00Z", "2026-03-10T12:05:00Z", 0},                         // consecutive
		{"*/5 * * * *", "2026-03-10T12:00:00Z", "2026-03-10T12:30:00Z", 5},
		{"*/5 * * * *", "2026-03-10T12:01:00Z", "2026-03-10T12:29:00Z", 5},
		{"*/5 * * * *", "2026-03-10T12:00:00Z", "2026-03-10T12:00:00Z", 0},
		{"*/5 * * * *", "2026-03-10T12:30:00Z", "2026-03-10T12:00:00Z", 0},
		{"* * * * *", "2026-03-10T12:00:00Z", "2026-03-17T12:00:00Z", MaxBetween}, // a week: capped
	} {
		if got := mustParse(t, c.spec).Between(at(c.a), at(c.b)); got != c.want {
			t.Errorf("%s: Between(%s, %s) = %d, want %d", c.spec, c.a, c.b, got, c.want)
		}
	}
}

// A schedule that can never fire is refused; a leap day is not.
func TestParseNeverDue(t *testing.T) {
	for _, spec := range []string{"0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *", "CRON_TZ=Europe/Berlin 0 0 30 2 *", "*/5 * 30 feb *"} {
		_, err := Parse(spec)
		var never *NeverDueError
		if !errors.As(err, &never) || never.Spec != spec {
			t.Errorf("Parse(%q): %v, want a NeverDueError", spec, err)
		}
	}
	for _, spec := range []string{"0 0 29 2 *", "0 0 31 * *", "0 0 30 2 1", "0 0 31 1-4 *"} {
		if _, err := Parse(spec); err != nil {
			t.Errorf("Parse(%q): %v", spec, err)
		}
	}
}

func TestFixedTime(t *testing.T) {
	for body, want := range map[string]bool{
		"30 1 * * *": true, "0 0,12 * * *": true, "0 0-23 * * *": true, "15 3 1 * *": true,
		"@daily": true, "@midnight": true, "@weekly": true, "@monthly": true, "@yearly": true, "@annually": true,
		"*/30 * * * *": false, "0 * * * *": false, "5 */2 * * *": false, "*/30 2 * * *": false, "? 1 * * *": false,
		"@hourly": false,
	} {
		if got := fixedTime(body); got != want {
			t.Errorf("fixedTime(%q) = %v, want %v", body, got, want)
		}
	}
}

// Next agrees with the rule applied minute by minute, as cron's daemon
// applies it, around every change of 2026 in three zones: a wildcard
// schedule runs at each instant whose wall time matches; a fixed-time one
// runs at an instant when a matching wall time is reached for the first
// time, the wall times the clock jumped over included.
func TestNextAgainstMinuteByMinute(t *testing.T) {
	specs := []string{"30 1 * * *", "30 2 * * *", "0,15 2 * * *", "0 0-23 * * *", "*/30 * * * *", "0 * * * *", "*/15 2 * * *", "45 1,2 * * *", "@daily"}
	for _, zone := range []string{"America/New_York", "Europe/Berlin", "Australia/Lord_Howe"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range specs {
			s := mustParse(t, "CRON_TZ="+zone+" "+spec)
			matches := func(w time.Time) bool { return s.wall.Next(w.Add(-time.Second)).Equal(w) }
			for c := time.Date(2026, 1, 1, 0, 0, 0, 0, loc); ; {
				_, change := c.ZoneBounds()
				if change.Year() != 2026 {
					break
				}
				c = change
				from, to := change.Add(-48*time.Hour), change.Add(48*time.Hour)
				var want []time.Time
				reached := s.wallOf(from) // the latest wall time the clock has shown
				for i := from.Add(time.Minute); !i.After(to); i = i.Add(time.Minute) {
					w := s.wallOf(i)
					if !s.fixed {
						if matches(w) {
							want = append(want, i)
						}
						continue
					}
					for v := reached.Add(time.Minute); !v.After(w); v = v.Add(time.Minute) {
						if matches(v) {
							want = append(want, i)
							break
						}
					}
					if w.After(reached) {
						reached = w
					}
				}
				var got []time.Time
				for n := s.Next(from); !n.After(to); n = s.Next(n) {
					got = append(got, n)
				}
				if !slices.EqualFunc(got, want, time.Time.Equal) {
					t.Errorf("%s %s around %s:\n got %v\nwant %v", zone, spec, change.UTC(), got, want)
				}
				// Latest, every 7 minutes: the last of want at or before.
				for i := from.Add(24 * time.Hour); !i.After(to); i = i.Add(7 * time.Minute) {
					var w time.Time
					for _, o := range want {
						if !o.After(i) {
							w = o
						}
					}
					if got := s.Latest(i); !got.Equal(w) {
						t.Errorf("%s %s: Latest(%s) = %s, want %s", zone, spec, i, got, w)
					}
				}
			}
		}
	}
}
