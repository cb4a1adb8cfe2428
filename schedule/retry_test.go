package schedule

import (
	"testing"
	"time"
)

func TestDecideRetry(t *testing.T) {
	s := mustParse(t, "0 3 * * *") // nightly at 03:00
	created := at("2026-03-01T00:00:00Z")
	occ := at("2026-03-10T03:00:00Z")
	two := Retries{Max: 2, Delay: time.Minute}
	for _, c := range []struct {
		name     string
		now      string
		last     Attempt
		deadline time.Duration
		r        Retries
		want     Verdict
		occ      string
		attempt  int
		retryAt  string
	}{
		{"due, never started", "2026-03-10T03:00:30Z", Attempt{}, 0, two, Run, "2026-03-10T03:00:00Z", 1, ""},
		{"due, the one before failed: a newer one ends its retries", "2026-03-10T03:00:30Z",
			Attempt{Occurrence: occ.AddDate(0, 0, -1), Number: 1, Outcome: Failed, EndedAt: at("2026-03-09T03:10:00Z")}, 0, two, Run, "2026-03-10T03:00:00Z", 1, ""},
		{"running", "2026-03-10T03:05:00Z", Attempt{Occurrence: occ, Number: 1, Outcome: Going}, 0, two, Started, "2026-03-10T03:00:00Z", 1, ""},
		{"succeeded", "2026-03-10T03:05:00Z", Attempt{Occurrence: occ, Number: 2, Outcome: Succeeded, EndedAt: at("2026-03-10T03:04:00Z")}, 0, two, Started, "2026-03-10T03:00:00Z", 2, ""},
		{"failed, no --retries", "2026-03-10T03:05:00Z", Attempt{Occurrence: occ, Number: 1, Outcome: Failed, EndedAt: at("2026-03-10T03:01:00Z")}, 0, Retries{}, Started, "2026-03-10T03:00:00Z", 1, ""},
		{"failed, before the delay", "2026-03-10T03:01:59Z", Attempt{Occurrence: occ, Number: 1, Outcome: Failed, EndedAt: at("2026-03-10T03:01:00Z")}, 0, two, RetryLater, "2026-03-10T03:00:00Z", 1, "2026-03-10T03:02:00Z"},
		{"failed, at the delay", "2026-03-10T03:02:00Z", Attempt{Occurrence: occ, Number: 1, Outcome: Failed, EndedAt: at("2026-03-10T03:01:00Z")}, 0, two, Retry, "2026-03-10T03:00:00Z", 2, ""},
		{"failed twice, one retry left", "2026-03-10T03:30:00Z", Attempt{Occurrence: occ, Number: 2, Outcome: Failed, EndedAt: at("2026-03-10T03:10:00Z")}, 0, two, Retry, "2026-03-10T03:00:00Z", 3, ""},
		{"failed three times: retries used up", "2026-03-10T03:30:00Z", Attempt{Occurrence: occ, Number: 3, Outcome: Failed, EndedAt: at("2026-03-10T03:10:00Z")}, 0, two, GaveUp, "2026-03-10T03:00:00Z", 3, ""},
		{"an old record without an attempt reads as the first", "2026-03-10T03:30:00Z", Attempt{Occurrence: occ, Outcome: Failed, EndedAt: at("2026-03-10T03:10:00Z")}, 0, Retries{Max: 1}, Retry, "2026-03-10T03:00:00Z", 2, ""},
		{"no delay", "2026-03-10T03:01:00Z", Attempt{Occurrence: occ, Number: 1, Outcome: Failed, EndedAt: at("2026-03-10T03:01:00Z")}, 0, Retries{Max: 1}, Retry, "2026-03-10T03:00:00Z", 2, ""},
		// The deadline counts from the occurrence.
		{"retry within the deadline", "2026-03-10T03:10:00Z", Attempt{Occurrence: occ, Number: 1, Outcome: Failed, EndedAt: at("2026-03-10T03:05:00Z")}, 10 * time.Minute, two, Retry, "2026-03-10T03:00:00Z", 2, ""},
		{"retry past the deadline", "2026-03-10T03:10:01Z", Attempt{Occurrence: occ, Number: 1, Outcome: Failed, EndedAt: at("2026-03-10T03:05:00Z")}, 10 * time.Minute, two, GaveUp, "2026-03-10T03:00:00Z", 1, ""},
		{"a retry that would come past the deadline", "2026-03-10T03:09:30Z", Attempt{Occurrence: occ, Number: 1, Outcome: Failed, EndedAt: at("2026-03-10T03:09:10Z")}, 10 * time.Minute, two, GaveUp, "2026-03-10T03:00:00Z", 1, ""},
		// A holder gone without an end record: the delay counts from when
		// it was found so, recorded by the one who found it.
		{"vanished, found now", "2026-03-10T03:20:00Z", Attempt{Occurrence: occ, Number: 1, Outcome: Vanished}, 0, two, Lost, "2026-03-10T03:00:00Z", 1, "2026-03-10T03:21:00Z"},
		{"vanished, found now, no delay", "2026-03-10T03:20:00Z", Attempt{Occurrence: occ, Number: 1, Outcome: Vanished}, 0, Retries{Max: 1}, Retry, "2026-03-10T03:00:00Z", 2, ""},
		{"vanished, found now, the delay past the deadline", "2026-03-10T03:20:00Z", Attempt{Occurrence: occ, Number: 1, Outcome: Vanished}, 20 * time.Minute, two, GaveUp, "2026-03-10T03:00:00Z", 1, ""},
		{"vanished, found before the delay", "2026-03-10T03:20:30Z", Attempt{Occurrence: occ, Number: 1, Outcome: Vanished, EndedAt: at("2026-03-10T03:20:00Z")}, 0, two, RetryLater, "2026-03-10T03:00:00Z", 1, "2026-03-10T03:21:00Z"},
		{"vanished, found a delay ago", "2026-03-10T03:21:00Z", Attempt{Occurrence: occ, Number: 1, Outcome: Vanished, EndedAt: at("2026-03-10T03:20:00Z")}, 0, two, Retry, "2026-03-10T03:00:00Z", 2, ""},
		{"vanished, last attempt", "2026-03-10T03:21:00Z", Attempt{Occurrence: occ, Number: 3, Outcome: Vanished}, 0, two, GaveUp, "2026-03-10T03:00:00Z", 3, ""},
		// Decide's verdicts stand where no retry applies.
		{"the next day, before the next occurrence: still retried", "2026-03-10T02:59:00Z", Attempt{Occurrence: occ.AddDate(0, 0, -1), Number: 2, Outcome: Failed, EndedAt: at("2026-03-09T03:10:00Z")}, 0, two, Retry, "2026-03-09T03:00:00Z", 3, ""},
		{"missed", "2026-03-10T05:00:00Z", Attempt{Occurrence: occ.AddDate(0, 0, -1), Number: 1, Outcome: Failed, EndedAt: at("2026-03-09T03:10:00Z")}, time.Hour, two, Missed, "2026-03-10T03:00:00Z", 1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := s.DecideRetry(at(c.now), created, c.last, c.deadline, c.r)
			var retryAt time.Time
			if c.retryAt != "" {
				retryAt = at(c.retryAt)
			}
			if d.Verdict != c.want || !d.Occurrence.Equal(at(c.occ)) || d.Attempt != c.attempt || !d.RetryAt.Equal(retryAt) {
				t.Errorf("DecideRetry at %s = %v %s attempt %d retry at %s; want %v %s attempt %d retry at %s",
					c.now, d.Verdict, d.Occurrence, d.Attempt, d.RetryAt, c.want, c.occ, c.attempt, retryAt)
			}
		})
	}
}
