package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
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
		{[]string{"--retries", "2"}, "--retries needs --schedule"},
		{[]string{"--retry-delay", "5m"}, "--retry-delay needs --schedule"},
		{[]string{"--schedule", "@hourly", "--retry-delay", "5m"}, "--retry-delay needs --retries"},
		{[]string{"--schedule", "@hourly", "--retries", "11"}, "invalid --retries 11: use 0 to 10"},
		{[]string{"--schedule", "@hourly", "--retries", "-1"}, "invalid --retries -1"},
		{[]string{"--schedule", "@hourly", "--retries", "1", "--retry-delay", "-1s"}, "invalid --retry-delay"},
		// A schedule that can never fire: refused, not run every minute for nothing.
		{[]string{"--schedule", "0 0 30 2 *"}, `invalid --schedule: schedule "0 0 30 2 *" can never fire`},
		{[]string{"--schedule", "CRON_TZ=Europe/Berlin 0 0 31 4 *"}, "can never fire"},
	} {
		args := append([]string{"-l", "x"}, c.args...)
		code, _, stderr := run(t, append(args, "--", "true")...)
		if code != exit.Usage || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 64 and one line with %q", c.args, code, stderr, c.want)
		}
	}
	// --retries and --retry-delay reach the run, systemd's time spans too.
	o, err := lineOptions(t, []string{"-l", "x", "--schedule", "@daily", "--retries", "3", "--retry-delay", "5min", "--", "true"},
		map[string]string{"AZURE_STORAGE_CONNECTION_STRING": "UseDevelopmentStorage=true"})
	if err != nil || o.run.Retries != 3 || o.run.RetryDelay != 5*time.Minute {
		t.Errorf("--retries 3 --retry-delay 5min: %v, %+v", err, o)
	}
	// 29 February fires every fourth year: accepted.
	for _, spec := range []string{"0 0 29 2 *", "CRON_TZ=Australia/Lord_Howe 30 2 * * *"} {
		if _, err := lineOptions(t, []string{"-l", "x", "--schedule", spec, "--", "true"}, map[string]string{"AZURE_STORAGE_CONNECTION_STRING": "UseDevelopmentStorage=true"}); err != nil {
			t.Errorf("--schedule %q: %v", spec, err)
		}
	}
}

func TestViewSchedule(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 16, 0, 0, time.UTC)
	p := &lease.Properties{Schedule: "*/5 * * * *", Occurrence: time.Date(2026, 3, 10, 12, 15, 0, 0, time.UTC)}
	v, ok := viewSchedule(p, now)
	if !ok || !v.missed.IsZero() || !v.due.IsZero() || !v.next.Equal(time.Date(2026, 3, 10, 12, 20, 0, 0, time.UTC)) {
		t.Errorf("on time: %+v", v)
	}
	// 12:05 started; 12:10 never did, and 12:15 is due too.
	p.Occurrence = time.Date(2026, 3, 10, 12, 5, 0, 0, time.UTC)
	if v, _ := viewSchedule(p, now); !v.missed.Equal(time.Date(2026, 3, 10, 12, 10, 0, 0, time.UTC)) ||
		!v.due.Equal(time.Date(2026, 3, 10, 12, 15, 0, 0, time.UTC)) {
		t.Errorf("missed: %+v", v)
	}
	// 12:10 started; 12:15 is due and not started yet: not missed.
	p.Occurrence = time.Date(2026, 3, 10, 12, 10, 0, 0, time.UTC)
	if v, _ := viewSchedule(p, now); !v.missed.IsZero() || !v.due.Equal(time.Date(2026, 3, 10, 12, 15, 0, 0, time.UTC)) {
		t.Errorf("due: %+v", v)
	}
	// Due before the lease blob was made: nothing is due.
	p.Created = time.Date(2026, 3, 10, 12, 15, 30, 0, time.UTC)
	if v, _ := viewSchedule(p, now); !v.due.IsZero() {
		t.Errorf("due before the blob: %+v", v)
	}
	p.Created, p.Occurrence = time.Time{}, time.Date(2026, 3, 10, 12, 5, 0, 0, time.UTC)
	vv, _ := viewSchedule(p, now)
	if res := decideCheck(checkInput{Now: now, Critical: time.Hour, Schedule: &vv}); res.State != stateCritical || !strings.Contains(res.Line, "never started") {
		t.Errorf("check: %v %q", res.State, res.Line)
	}
	if _, ok := viewSchedule(&lease.Properties{}, now); ok {
		t.Error("an unscheduled lease shows a schedule")
	}
}
