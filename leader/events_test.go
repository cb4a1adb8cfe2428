package leader

import (
	"strings"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/imds"
)

func TestEventText(t *testing.T) {
	tests := []struct {
		name string
		ev   imds.Event
		want string
	}{
		{"scheduled", imds.Event{EventID: "1234-ab", EventType: "Freeze", EventStatus: "Scheduled",
			NotBeforeText: "Mon, 19 Sep 2016 18:29:47 GMT", NotBefore: imds.ParseNotBefore("Mon, 19 Sep 2016 18:29:47 GMT")},
			"scheduled event Freeze 1234-ab for this VM at Mon, 19 Sep 2016 18:29:47 GMT"},
		{"started", imds.Event{EventID: "9", EventType: "Reboot", EventStatus: "Started"},
			"scheduled event Reboot 9 for this VM (Started, may start at any moment)"},
		{"malformed", imds.Event{EventID: "7", EventType: "Preempt", EventStatus: "Scheduled", NotBeforeText: "soon"},
			`scheduled event Preempt 7 for this VM at "soon" (unreadable: taken as now)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := eventText(tt.ev); got != tt.want {
				t.Errorf("eventText = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStepDownKillBy(t *testing.T) {
	now := time.Now() // with a monotonic reading
	at := func(d time.Duration) imds.Event {
		nb := now.Add(d).UTC().Truncate(time.Second)
		return imds.Event{EventType: "Preempt", EventStatus: "Scheduled", NotBefore: nb, NotBeforeText: nb.Format(time.RFC1123)}
	}
	grace := 10 * time.Second
	tests := []struct {
		name string
		ev   imds.Event
		min  time.Duration // the kill is due in [min, max] from now
		max  time.Duration
	}{
		{"far: the kill grace", at(15 * time.Minute), grace, grace},
		{"near: 2 s before NotBefore", at(7 * time.Second), 4 * time.Second, 5 * time.Second},
		{"within the margin: now", at(1500 * time.Millisecond), 0, 0},
		{"past: now", at(-time.Minute), 0, 0},
		{"no NotBefore (Started): now", imds.Event{EventType: "Freeze", EventStatus: "Started"}, 0, 0},
		{"malformed NotBefore: now", imds.Event{EventType: "Freeze", EventStatus: "Scheduled", NotBeforeText: "tomorrow"}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stepDownKillBy(tt.ev, now, grace)
			d := got.Sub(now)
			if d < tt.min || d > tt.max {
				t.Errorf("kill due in %v, want %v..%v", d, tt.min, tt.max)
			}
			// The deadline keeps now's monotonic reading: a wall-clock jump
			// does not move it.
			if !strings.Contains(got.String(), "m=") {
				t.Errorf("deadline %v has no monotonic reading", got)
			}
		})
	}
}
