package leader

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
)

func oncePer(d time.Duration) func(o *Options) { return func(o *Options) { o.OncePer = d } }

// request is `leaderrun trigger` by alice.
func (f *fleet) request(reason string) (*lease.Trigger, bool) {
	f.t.Helper()
	tr, joined, err := f.blob("alice").RequestRun(f.t.Context(), "alice@laptop", reason)
	if err != nil {
		f.t.Fatal(err)
	}
	return tr, joined
}

// A trigger overrides the --once-per window once: the next invocation runs
// COMMAND, told it was manual and when; the one after skips again.
func TestTriggerOverridesTheWindowOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		line := oncePer(time.Hour)
		f.run(line)
		sleepUntil(time.Now().Add(time.Minute))
		if code, _ := f.run(line); code != exit.OK || len(f.jobs.launched()) != 1 {
			t.Fatalf("within the window: exit %d, %d runs", code, len(f.jobs.launched()))
		}
		tr, joined := f.request("rerun after the fix")
		if joined || tr.At.IsZero() {
			t.Fatalf("trigger %+v, joined %v", tr, joined)
		}
		if again, joined := f.request("me too"); !joined || again.Nonce != tr.Nonce {
			t.Errorf("a second request before the run: %+v joined %v, want to join the first", again, joined)
		}
		sleepUntil(time.Now().Add(time.Minute))
		f.jobs.code = 4
		if code, _ := f.run(line); code != 4 {
			t.Fatalf("the triggered run: exit %d, want 4", code)
		}
		sleepUntil(time.Now().Add(time.Minute))
		if code, _ := f.run(line); code != exit.OK {
			t.Fatalf("after the triggered run: exit %d", code)
		}
		envs := f.jobs.launched()
		if len(envs) != 2 {
			t.Fatalf("%d runs, want 2", len(envs))
		}
		e := envs[1]
		// The first run ended at 00:00:05, recorded at the latest the
		// service's clock may read then (its Date to the second, plus one).
		if e["LEADERRUN_TRIGGER"] != "manual" || e["LEADERRUN_ATTEMPT"] != "1" || e["LEADERRUN_OCCURRENCE"] != tr.At.Format(time.RFC3339) ||
			e["LEADERRUN_LAST_SUCCESS"] != "2000-01-01T00:00:06Z" || e["LEADERRUN_MISSED"] != "" || e["LEADERRUN_PREVIOUS_OCCURRENCE"] != "" {
			t.Errorf("the triggered run's context: %v", e)
		}
		if r := lease.ReadHistory(f.props().Metadata, false)[0]; r.Cause == nil || r.Cause.String() != "manual by alice@laptop: rerun after the fix" {
			t.Errorf("history names it %v", r.Cause)
		}
		// Followed: the run it asked for, with its status.
		r, err := f.blob("alice").FollowTrigger(t.Context(), tr, time.Second, time.Minute, time.Time{}, nil)
		if err != nil || r.ExitCode == nil || *r.ExitCode != 4 {
			t.Errorf("FollowTrigger = %+v, %v; want the run that exited 4", r, err)
		}
	})
}

// --schedule with nothing due runs a trigger; one due waits for the next
// invocation. --once runs one after its success. A pause holds it off.
func TestTriggerOtherLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		line := scheduled(t, "*/10 * * * *", 0, 0)
		sleepUntil(time.Now().Add(time.Minute))
		f.run(line)
		tr, _ := f.request("")
		sleepUntil(time.Now().Add(time.Minute))
		f.run(line)
		envs := f.jobs.launched()
		if len(envs) != 1 || envs[0]["LEADERRUN_TRIGGER"] != "manual" || envs[0]["LEADERRUN_OCCURRENCE"] != tr.At.Format(time.RFC3339) ||
			envs[0]["LEADERRUN_PREVIOUS_OCCURRENCE"] != "2000-01-01T00:00:00Z" {
			t.Fatalf("nothing due, a trigger: %v", envs)
		}
		if p := f.props(); !p.Occurrence.IsZero() {
			t.Errorf("a manual run recorded the occurrence %s", p.Occurrence)
		}
		// A trigger while an occurrence is due: the trigger first.
		sleepUntil(time.Date(2000, 1, 1, 0, 10, 5, 0, time.UTC))
		f.request("again")
		f.run(line)
		sleepUntil(time.Now().Add(time.Minute))
		f.run(line)
		envs = f.jobs.launched()
		if len(envs) != 3 || envs[1]["LEADERRUN_TRIGGER"] != "manual" || envs[2]["LEADERRUN_TRIGGER"] != "schedule" {
			t.Fatalf("a trigger and a due occurrence: %v", envs)
		}

		// Paused: nothing due, the trigger waits; resumed, it runs.
		if _, err := f.blob("op").WritePause(t.Context(), lease.Pause{Reason: "freeze"}); err != nil {
			t.Fatal(err)
		}
		f.request("while paused")
		sleepUntil(time.Now().Add(time.Minute))
		if code, _ := f.run(line); code != exit.OK || len(f.jobs.launched()) != 3 {
			t.Fatalf("paused: exit %d, %d runs", code, len(f.jobs.launched()))
		}
		if _, err := f.blob("op").DeletePause(t.Context()); err != nil {
			t.Fatal(err)
		}
		f.run(line)
		if n := len(f.jobs.launched()); n != 4 {
			t.Fatalf("resumed: %d runs, want 4", n)
		}

		g := newFleet(t)
		once := func(o *Options) { o.Once = true }
		g.run(once)
		g.run(once)
		g.request("migrate again")
		g.run(once)
		g.run(once)
		if envs := g.jobs.launched(); len(envs) != 2 || envs[1]["LEADERRUN_TRIGGER"] != "manual" {
			t.Errorf("--once: %v", envs)
		}
	})
}

// A lease no line that runs triggers has used refuses one: nothing would
// run it.
func TestTriggerRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		var nt *lease.NotTriggerableError
		if _, _, err := f.blob("alice").RequestRun(t.Context(), "alice", ""); !errors.As(err, &nt) {
			t.Errorf("a lease never used: %v, want NotTriggerableError", err)
		}
		f.run(func(o *Options) {})
		if _, _, err := f.blob("alice").RequestRun(t.Context(), "alice", ""); !errors.As(err, &nt) {
			t.Errorf("a service's lease: %v, want NotTriggerableError", err)
		}
		if _, ok := f.svc.Blob("leases", lease.TriggerBlob("job")); ok {
			t.Error("a refused trigger wrote its marker")
		}
	})
}

// Nobody takes a trigger within the wait: ErrNotTaken. A run taken is
// followed to its end; one whose holder vanished ends unknown.
func TestFollowTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t)
		line := oncePer(time.Hour)
		f.run(line)
		tr, _ := f.request("")
		b := f.blob("alice")
		if _, err := b.FollowTrigger(t.Context(), tr, time.Second, time.Minute, time.Now().Add(10*time.Second), nil); !errors.Is(err, lease.ErrNotTaken) {
			t.Fatalf("nobody took it: %v, want ErrNotTaken", err)
		}
		f.jobs.took = time.Minute
		var (
			wg    sync.WaitGroup
			r     lease.Run
			err   error
			taken int64
		)
		wg.Go(func() {
			r, err = b.FollowTrigger(t.Context(), tr, time.Second, time.Minute, time.Now().Add(10*time.Second),
				func(term int64, holder string) { taken = term })
		})
		sleepUntil(time.Now().Add(5 * time.Second))
		f.run(line)
		wg.Wait()
		if err != nil || r.ExitCode == nil || *r.ExitCode != 0 || taken != r.Term || taken == 0 {
			t.Errorf("followed: %+v (taken by term %d), %v", r, taken, err)
		}
		if !strings.Contains(r.Holder, "vm-") {
			t.Errorf("holder %q", r.Holder)
		}

		// Taken by a holder that dies: its end is unknown once its lease
		// has gone.
		tr, _ = f.request("")
		e, _ := lease.NewElector(f.blob("dead"), lease.Config{Identity: "dead"})
		l, aerr := e.Acquire(t.Context(), lease.WaitOptions{NoWait: true, OncePer: time.Hour})
		if aerr != nil || l.Cause == nil || l.Cause.Trigger != lease.TriggerManual {
			t.Fatalf("the dying holder: %+v, %v", l, aerr)
		}
		r, err = b.FollowTrigger(t.Context(), tr, time.Second, time.Minute, time.Time{}, nil)
		if err != nil || !r.EndUnknown() || r.Holder != "dead" {
			t.Errorf("a vanished holder: %+v, %v; want its run, end unknown", r, err)
		}
	})
}
