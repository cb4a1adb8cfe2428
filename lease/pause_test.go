package lease

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPauseActive(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		md    map[string]string
		now   time.Time
		want  bool
		until time.Time
	}{
		{"open-ended", map[string]string{"reason": "maintenance", "since": "2026-11-23T11:00:00Z"}, now, true, time.Time{}},
		{"until later", map[string]string{"until": "2026-11-23T12:00:01Z"}, now, true, now.Add(time.Second)},
		{"until reached", map[string]string{"until": "2026-11-23T12:00:00Z"}, now, false, now},
		{"until passed", map[string]string{"until": "2026-11-23T11:00:00Z"}, now, false, now.Add(-time.Hour)},
		{"malformed until is open-ended", map[string]string{"until": "tomorrow"}, now, true, time.Time{}},
		{"no service time", map[string]string{"until": "2026-11-23T11:00:00Z"}, time.Time{}, true, now.Add(-time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pauseOf(tt.md)
			if got := p.Active(tt.now); got != tt.want {
				t.Errorf("Active = %v, want %v", got, tt.want)
			}
			if !p.Until.Equal(tt.until) {
				t.Errorf("Until = %v, want %v", p.Until, tt.until)
			}
		})
	}
	if (*Pause)(nil).Active(now) {
		t.Error("a nil pause is active")
	}
}

func TestPauseMetadataRoundTrip(t *testing.T) {
	for _, in := range []Pause{
		{Reason: "db upgrade, ticket 42", Since: time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC), Until: time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)},
		{Reason: "moving", Since: time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC), Drain: true},
	} {
		md, err := in.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		if out := pauseOf(md); *out != in {
			t.Errorf("round trip = %+v, want %+v", *out, in)
		}
	}
	for _, bad := range []string{"caf\u00e9", strings.Repeat("r", maxPauseReasonLen+1), " padded", "line\nbreak"} {
		var ce *ConfigError
		if _, err := (Pause{Reason: bad}).Metadata(); !errors.As(err, &ce) {
			t.Errorf("reason %q: err = %v, want a *ConfigError", bad, err)
		}
	}
}
