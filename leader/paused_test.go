package leader

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
)

// A paused lease under --schedule, with an occurrence due, is not "held
// quietly": -E after one line naming the pause.
func TestSchedulePausedIsNotQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		line := scheduled(t, "*/10 * * * *", 0, 0)
		sleepUntil(time.Now().Add(time.Minute))
		f.run(line)
		if _, err := f.blob("op").WritePause(t.Context(), lease.Pause{Reason: "db freeze"}); err != nil {
			t.Fatal(err)
		}
		sleepUntil(time.Date(2000, 1, 1, 0, 10, 5, 0, time.UTC))
		code, log := f.run(func(o *Options) { line(o); o.ConflictCode = 9 })
		if code != 9 {
			t.Errorf("paused, an occurrence due: exit %d, want -E 9\n%s", code, log)
		}
		// The held lease of an earlier run is still quiet.
		if _, err := f.blob("op").DeletePause(t.Context()); err != nil {
			t.Fatal(err)
		}
		e, _ := lease.NewElector(f.blob("long"), lease.Config{Identity: "long"})
		if _, err := e.Acquire(t.Context(), lease.WaitOptions{NoWait: true}); err != nil {
			t.Fatal(err)
		}
		if code, _ := f.run(line); code != exit.OK {
			t.Errorf("held by an earlier run: exit %d, want 0", code)
		}
	})
}
