package leader

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/schedule"
)

// scheduled sets a --schedule line with retries.
func scheduled(t *testing.T, spec string, retries int, delay time.Duration) func(o *Options) {
	s, err := schedule.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return func(o *Options) { o.Schedule, o.Retries, o.RetryDelay = s, retries, delay }
}

// A failed attempt runs again on the next invocation after the delay, at
// most --retries more times, each with its attempt in the environment and
// in history; the next occurrence starts afresh.
func TestScheduleRetriesAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		line := scheduled(t, "*/10 * * * *", 2, time.Minute)
		start := time.Now() // 2000-01-01T00:00:00Z in the bubble
		sleepUntil(start.Add(time.Minute))
		if code, _ := f.run(line); code != exit.OK { // makes the blob; nothing due
			t.Fatalf("first invocation: %d", code)
		}
		f.jobs.code = 3
		occ := start.Add(10 * time.Minute)
		sleepUntil(occ.Add(5 * time.Second))
		if code, _ := f.run(line); code != 3 {
			t.Fatalf("attempt 1: exit %d, want 3", code)
		}
		sleepUntil(occ.Add(30 * time.Second)) // 20 s after the end: the delay has not passed
		if code, log := f.run(line); code != exit.OK || !strings.Contains(log, "its retry is not due yet") {
			t.Fatalf("before the delay: exit %d, log %s", code, log)
		}
		sleepUntil(occ.Add(71 * time.Second))
		if code, _ := f.run(line); code != 3 {
			t.Fatalf("attempt 2: exit %d, want 3", code)
		}
		sleepUntil(occ.Add(3 * time.Minute))
		if code, _ := f.run(line); code != 3 {
			t.Fatalf("attempt 3: exit %d, want 3", code)
		}
		sleepUntil(occ.Add(5 * time.Minute))
		if code, log := f.run(line); code != exit.OK || !strings.Contains(log, "no retry is left") {
			t.Fatalf("after the last retry: exit %d, log %s", code, log)
		}
		f.jobs.code = 0
		sleepUntil(occ.Add(10*time.Minute + 5*time.Second))
		if code, _ := f.run(line); code != exit.OK {
			t.Fatalf("the next occurrence: exit %d", code)
		}
		envs := f.jobs.launched()
		if len(envs) != 4 {
			t.Fatalf("%d runs, want 4", len(envs))
		}
		want := []struct{ trigger, attempt, occ string }{
			{"schedule", "1", "2000-01-01T00:10:00Z"}, {"retry", "2", "2000-01-01T00:10:00Z"},
			{"retry", "3", "2000-01-01T00:10:00Z"}, {"schedule", "1", "2000-01-01T00:20:00Z"},
		}
		for i, w := range want {
			e := envs[i]
			if e["LEADERRUN_TRIGGER"] != w.trigger || e["LEADERRUN_ATTEMPT"] != w.attempt || e["LEADERRUN_OCCURRENCE"] != w.occ {
				t.Errorf("run %d: trigger %q attempt %q occurrence %q, want %v", i+1,
					e["LEADERRUN_TRIGGER"], e["LEADERRUN_ATTEMPT"], e["LEADERRUN_OCCURRENCE"], w)
			}
		}
		if e := envs[0]; e["LEADERRUN_PREVIOUS_OCCURRENCE"] != "2000-01-01T00:00:00Z" || e["LEADERRUN_MISSED"] != "0" || e["LEADERRUN_LAST_SUCCESS"] != "" {
			t.Errorf("attempt 1's context: %v", e)
		}
		if e := envs[3]; e["LEADERRUN_PREVIOUS_OCCURRENCE"] != "2000-01-01T00:10:00Z" || e["LEADERRUN_MISSED"] != "0" {
			t.Errorf("the next occurrence's context: %v", e)
		}
		var causes []string
		for _, r := range lease.ReadHistory(f.props().Metadata, false) {
			if r.Cause != nil {
				causes = append(causes, r.Cause.String())
			}
		}
		if got, want := strings.Join(causes, "; "), "schedule 2000-01-01T00:20Z; retry 3 of 2000-01-01T00:10Z; retry 2 of 2000-01-01T00:10Z; schedule 2000-01-01T00:10Z"; got != want {
			t.Errorf("history: %s\nwant %s", got, want)
		}
		if p := f.props(); p.Attempt != 1 || p.Metadata["attempt"] != "1" {
			t.Errorf("attempt recorded: %d (%q), want 1", p.Attempt, p.Metadata["attempt"])
		}
	})
}

// Without --retries a failure is not run again; a success is not either.
func TestScheduleNoRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		start := time.Now()
		sleepUntil(start.Add(time.Minute))
		f.run(scheduled(t, "*/10 * * * *", 0, time.Minute))
		f.jobs.code = 1
		sleepUntil(start.Add(10*time.Minute + 5*time.Second))
		f.run(scheduled(t, "*/10 * * * *", 0, time.Minute))
		sleepUntil(start.Add(15 * time.Minute))
		f.run(scheduled(t, "*/10 * * * *", 0, time.Minute))
		f.jobs.code = 0
		sleepUntil(start.Add(20*time.Minute + 5*time.Second))
		f.run(scheduled(t, "*/10 * * * *", 2, time.Minute))
		sleepUntil(start.Add(25 * time.Minute))
		f.run(scheduled(t, "*/10 * * * *", 2, time.Minute))
		if n := len(f.jobs.launched()); n != 2 {
			t.Errorf("%d runs, want 2 (one per occurrence)", n)
		}
	})
}

// A holder that died with no end recorded (the occurrence started, not
// ended, the lease free): the next invocation records when it found it so
// and runs nothing; the retry comes the delay after that.
func TestScheduleRetriesAVanishedHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		line := scheduled(t, "*/10 * * * *", 1, time.Minute)
		start := time.Now()
		sleepUntil(start.Add(time.Minute))
		f.run(line)
		occ := start.Add(10 * time.Minute)
		sleepUntil(occ.Add(5 * time.Second))
		// The holder claims the occurrence and dies: no end, no release.
		var o Options
		line(&o)
		e, err := lease.NewElector(f.blob("dead"), lease.Config{Identity: "dead"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Acquire(t.Context(), lease.WaitOptions{NoWait: true, Schedule: o.leaseSchedule()}); err != nil {
			t.Fatal(err)
		}
		sleepUntil(occ.Add(10 * time.Second))
		if code, log := f.run(line); code != exit.OK {
			t.Fatalf("while the dead holder's lease lasts: exit %d\n%s", code, log)
		}
		found := occ.Add(30 * time.Second)
		sleepUntil(found) // its lease has expired
		if code, log := f.run(line); code != exit.OK || !strings.Contains(log, "its retry is not due yet") {
			t.Fatalf("the holder found gone: exit %d\n%s", code, log)
		}
		if got := f.props().Metadata["lostat"]; got != "1,"+found.UTC().Format(time.RFC3339) {
			t.Errorf("lostat = %q", got)
		}
		if n := len(f.jobs.launched()); n != 0 {
			t.Fatalf("%d runs before the delay", n)
		}
		sleepUntil(found.Add(50 * time.Second))
		f.run(line)
		sleepUntil(found.Add(61 * time.Second))
		if code, _ := f.run(line); code != exit.OK {
			t.Fatalf("the retry: exit %d", code)
		}
		envs := f.jobs.launched()
		if len(envs) != 1 || envs[0]["LEADERRUN_TRIGGER"] != "retry" || envs[0]["LEADERRUN_ATTEMPT"] != "2" {
			t.Fatalf("runs: %v, want the retry, attempt 2", envs)
		}
		if _, ok := f.props().Metadata["lostat"]; ok {
			t.Error("lostat outlives the retry's claim")
		}
	})
}
