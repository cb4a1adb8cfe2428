package schedule

// wall.go: a schedule's zone, its wall times and its instants, by the rule
// of the package comment. A wall time is held as a time.Time in UTC whose
// clock reads the zone's clock (02:30 in Berlin is 02:30Z here); the zone's
// offsets come from time.Location (Zone, ZoneBounds), so the parser only
// ever steps through wall times in UTC, where none repeats and none is
// skipped.

import "time"

// wallOf is t's wall time in the schedule's zone.
func (s *Schedule) wallOf(t time.Time) time.Time {
	l := t.In(s.loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// offset is the zone's offset at t, and when it next changes (zero: never).
func (s *Schedule) offset(t time.Time) (off time.Duration, start, end time.Time) {
	l := t.In(s.loc)
	_, sec := l.Zone()
	start, end = l.ZoneBounds()
	return time.Duration(sec) * time.Second, start, end
}

// instant is the first instant whose wall time is w, or, for a wall time
// the zone skips, the first instant after the gap.
func (s *Schedule) instant(w time.Time) time.Time {
	// The zone's offsets are within a day of UTC: every instant whose
	// wall time is w is within a day of w read as UTC. Walk the zone's
	// spans of one offset from a day before it.
	for seg := w.Add(-26 * time.Hour); ; {
		off, start, end := s.offset(seg)
		i := w.Add(-off)
		switch {
		case !start.IsZero() && i.Before(start):
			// w is before this span's first wall time, and after the
			// last one of the span before (the loop got here): a gap.
			return start.UTC()
		case end.IsZero() || i.Before(end):
			return i.UTC()
		}
		seg = end
	}
}

// nextFixed is Next for a fixed-time schedule: the instant of the first
// wall time whose instant is after t. A wall time at or before t's own
// never has an instant after t; later ones can have one at or before t
// only in a repeated hour, which the loop steps over.
func (s *Schedule) nextFixed(t time.Time) time.Time {
	for w := s.wallOf(t); ; {
		if w = s.wall.Next(w); w.IsZero() {
			return time.Time{}
		}
		if i := s.instant(w); i.After(t) {
			return i
		}
	}
}

// nextWild is Next for a wildcard schedule: the first instant after t
// whose wall time matches, one span of the zone's offset at a time.
func (s *Schedule) nextWild(t time.Time) time.Time {
	for after, seg := t, t; ; {
		off, _, end := s.offset(seg)
		w := s.wall.Next(after.UTC().Add(off))
		if w.IsZero() {
			return time.Time{}
		}
		if i := w.Add(-off); end.IsZero() || i.Before(end) {
			return i
		}
		// On in the next span, from its first instant.
		after, seg = end.Add(-time.Nanosecond), end
	}
}
