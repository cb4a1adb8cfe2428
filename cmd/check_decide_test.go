package cmd

import (
	"errors"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/lease"
)

var checkNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func exitPtr(c int) *int { return &c }

// ago is a service time d before checkNow.
func ago(d time.Duration) time.Time { return checkNow.Add(-d) }

// histRun is a run of holder h under term that started at start and took 1 s;
// exit < 0 means lost (no end recorded), -2 means running.
func histRun(h string, term int64, start time.Time, exit int) lease.Run {
	r := lease.Run{Holder: h, Term: term, Start: start}
	switch {
	case exit == -2:
		r.Running = true
	case exit >= 0:
		r.End, r.ExitCode = start.Add(time.Second), exitPtr(exit)
	}
	return r
}

func TestCheckDecide(t *testing.T) {
	const maxAge = time.Hour
	success := histRun("vm-3", 42, ago(193*time.Second), 0) // ended 3m12s ago
	keyed := &lease.Run{Holder: "vm-3", Term: 42, End: success.End, ExitCode: exitPtr(0)}
	tests := []struct {
		name  string
		runs  []lease.Run
		last  *lease.Run
		now   time.Time
		state checkState
		line  string
	}{
		{"ok", []lease.Run{success}, keyed, checkNow, stateOK,
			"OK: last successful run ended 3m12s ago on vm-3 (term 42) | age=192s;;3600 last_exit=0"},
		{"ok from the history alone", []lease.Run{success}, nil, checkNow, stateOK,
			"OK: last successful run ended 3m12s ago on vm-3 (term 42) | age=192s;;3600 last_exit=0"},
		{"ok with a run in progress", []lease.Run{histRun("vm-2", 43, ago(60*time.Second), -2), success}, keyed, checkNow, stateOK,
			"OK: last successful run ended 3m12s ago on vm-3 (term 42); a run is in progress on vm-2 (term 43), started 1m0s ago | age=192s;;3600 last_exit=0"},
		{"ok when the failure came before the success", []lease.Run{success, histRun("vm-1", 41, ago(10*time.Minute), 1)}, keyed, checkNow, stateOK,
			"OK: last successful run ended 3m12s ago on vm-3 (term 42) | age=192s;;3600 last_exit=0"},
		{"ok at exactly max-age", []lease.Run{histRun("vm-3", 42, ago(time.Hour+time.Second), 0)}, nil, checkNow, stateOK,
			"OK: last successful run ended 1h0m0s ago on vm-3 (term 42) | age=3600s;;3600 last_exit=0"},
		{"warning: a later run failed", []lease.Run{histRun("vm-2", 43, ago(61*time.Second), 1), success}, keyed, checkNow, stateWarning,
			"WARNING: last successful run ended 3m12s ago on vm-3 (term 42), but a later run failed: exit 1 on vm-2 (term 43) at 2026-11-23T11:59:00Z (1m0s ago) | age=192s;;3600 last_exit=1"},
		{"warning: a later run lost its lease", []lease.Run{histRun("vm-2", 43, ago(61*time.Second), -1), success}, keyed, checkNow, stateWarning,
			"WARNING: last successful run ended 3m12s ago on vm-3 (term 42), but a later run failed: lost its lease before recording its end, on vm-2 (term 43), started 2026-11-23T11:58:59Z (1m1s ago) | age=192s;;3600 last_exit=U"},
		{"warning: two later failures, one running", []lease.Run{
			histRun("vm-4", 45, ago(10*time.Second), -2), histRun("vm-1", 44, ago(31*time.Second), 2),
			histRun("vm-2", 43, ago(61*time.Second), 1), success}, keyed, checkNow, stateWarning,
			"WARNING: last successful run ended 3m12s ago on vm-3 (term 42), but 2 later runs failed, the last: exit 2 on vm-1 (term 44) at 2026-11-23T11:59:30Z (30s ago); a run is in progress on vm-4 (term 45), started 10s ago | age=192s;;3600 last_exit=2"},
		{"warning: the success rolled out of the history", []lease.Run{histRun("vm-2", 43, ago(61*time.Second), 1)}, keyed, checkNow, stateWarning,
			"WARNING: last successful run ended 3m12s ago on vm-3 (term 42), but a later run failed: exit 1 on vm-2 (term 43) at 2026-11-23T11:59:00Z (1m0s ago) | age=192s;;3600 last_exit=1"},
		{"critical: too old", []lease.Run{histRun("vm-3", 42, ago(2*time.Hour+time.Second), 0)}, nil, checkNow, stateCritical,
			"CRITICAL: no run ended with status 0 within 1h0m0s: the last successful run ended 2h0m0s ago on vm-3 (term 42) | age=7200s;;3600 last_exit=0"},
		{"critical: too old, and a later failure", []lease.Run{histRun("vm-2", 43, ago(time.Hour), 1), histRun("vm-3", 42, ago(2*time.Hour+time.Second), 0)}, nil, checkNow, stateCritical,
			"CRITICAL: no run ended with status 0 within 1h0m0s: the last successful run ended 2h0m0s ago on vm-3 (term 42); a later run failed: exit 1 on vm-2 (term 43) at 2026-11-23T11:00:01Z (59m59s ago) | age=7200s;;3600 last_exit=1"},
		{"critical: never, nothing recorded", nil, nil, checkNow, stateCritical,
			"CRITICAL: no run has ever ended with status 0; no run is recorded | age=U;;3600 last_exit=U"},
		{"critical: never, only failures", []lease.Run{histRun("vm-2", 2, ago(time.Minute+time.Second), 1), histRun("", 0, ago(time.Hour), -1)}, nil, checkNow, stateCritical,
			"CRITICAL: no run has ever ended with status 0; 2 runs failed, the last: exit 1 on vm-2 (term 2) at 2026-11-23T11:59:00Z (1m0s ago) | age=U;;3600 last_exit=1"},
		{"critical: never, one lost", []lease.Run{histRun("", 0, ago(time.Hour), -1)}, nil, checkNow, stateCritical,
			"CRITICAL: no run has ever ended with status 0; the last run failed: lost its lease before recording its end, on an unknown host, started 2026-11-23T11:00:00Z (1h0m0s ago) | age=U;;3600 last_exit=U"},
		{"critical: the first run is in progress", []lease.Run{histRun("vm-2", 1, ago(time.Minute), -2)}, nil, checkNow, stateCritical,
			"CRITICAL: no run has ever ended with status 0; a run is in progress on vm-2 (term 1), started 1m0s ago | age=U;;3600 last_exit=U"},
		{"a holder's | does not start the perfdata", []lease.Run{histRun("a|b", 7, ago(11*time.Second), 0)}, nil, checkNow, stateOK,
			"OK: last successful run ended 10s ago on a/b (term 7) | age=10s;;3600 last_exit=0"},
		{"ok: a run lost in the second the success ended came before it (lower term)", []lease.Run{
			{Holder: "vm-9", Term: 9, Start: ago(time.Minute), End: ago(time.Minute), ExitCode: exitPtr(0)},
			{Holder: "vm-8", Term: 8, Start: ago(time.Minute)}}, nil, checkNow, stateOK,
			"OK: last successful run ended 1m0s ago on vm-9 (term 9) | age=60s;;3600 last_exit=0"},
		{"warning: a run lost in the second the success ended came after it (higher term)", []lease.Run{
			{Holder: "vm-10", Term: 10, Start: ago(time.Minute)},
			{Holder: "vm-9", Term: 9, Start: ago(time.Minute), End: ago(time.Minute), ExitCode: exitPtr(0)}}, nil, checkNow, stateWarning,
			"WARNING: last successful run ended 1m0s ago on vm-9 (term 9), but a later run failed: lost its lease before recording its end, on vm-10 (term 10), started 2026-11-23T11:59:00Z (1m0s ago) | age=60s;;3600 last_exit=U"},
		{"unknown: no service time", []lease.Run{success}, keyed, time.Time{}, stateUnknown,
			"UNKNOWN: the storage service sent no Date header: cannot tell how old the last run is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideCheck(checkInput{Runs: tt.runs, LastSuccess: tt.last, Now: tt.now, Critical: maxAge})
			if got.State != tt.state || got.Line != tt.line {
				t.Errorf("decideCheck =\n  %d %q\nwant\n  %d %q", got.State, got.Line, tt.state, tt.line)
			}
		})
	}
}

func TestCheckUnknown(t *testing.T) {
	got := checkUnknown(errors.New("cannot read lease \"x\":\nrefused | 403"))
	if want := `UNKNOWN: cannot read lease "x": refused / 403`; got.State != stateUnknown || got.Line != want {
		t.Errorf("checkUnknown = %d %q, want 3 %q", got.State, got.Line, want)
	}
	for s, word := range map[checkState]string{stateOK: "OK", stateWarning: "WARNING", stateCritical: "CRITICAL", stateUnknown: "UNKNOWN"} {
		if s.String() != word {
			t.Errorf("state %d is %q, want %q", int(s), s, word)
		}
	}
}

// -w and -c: the age of the last success against both, in the perfdata too.
func TestCheckDecideThresholds(t *testing.T) {
	succ := func(d time.Duration) lease.Run { return histRun("vm-3", 42, ago(d+time.Second), 0) } // ended d ago
	tests := []struct {
		name  string
		runs  []lease.Run
		w, c  time.Duration
		state checkState
		line  string
	}{
		{"ok within -w", []lease.Run{succ(10 * time.Minute)}, 30 * time.Minute, time.Hour, stateOK,
			"OK: last successful run ended 10m0s ago on vm-3 (term 42) | age=600s;1800;3600 last_exit=0"},
		{"ok at exactly -w", []lease.Run{succ(30 * time.Minute)}, 30 * time.Minute, time.Hour, stateOK,
			"OK: last successful run ended 30m0s ago on vm-3 (term 42) | age=1800s;1800;3600 last_exit=0"},
		{"warning past -w", []lease.Run{succ(40 * time.Minute)}, 30 * time.Minute, time.Hour, stateWarning,
			"WARNING: no run ended with status 0 within 30m0s: the last successful run ended 40m0s ago on vm-3 (term 42) | age=2400s;1800;3600 last_exit=0"},
		{"warning past -w, and a later failure", []lease.Run{histRun("vm-2", 43, ago(time.Minute+time.Second), 1), succ(40 * time.Minute)}, 30 * time.Minute, time.Hour, stateWarning,
			"WARNING: no run ended with status 0 within 30m0s: the last successful run ended 40m0s ago on vm-3 (term 42); a later run failed: exit 1 on vm-2 (term 43) at 2026-11-23T11:59:00Z (1m0s ago) | age=2400s;1800;3600 last_exit=1"},
		{"critical past -c", []lease.Run{succ(2 * time.Hour)}, 30 * time.Minute, time.Hour, stateCritical,
			"CRITICAL: no run ended with status 0 within 1h0m0s: the last successful run ended 2h0m0s ago on vm-3 (term 42) | age=7200s;1800;3600 last_exit=0"},
		{"no -w", []lease.Run{succ(40 * time.Minute)}, 0, time.Hour, stateOK,
			"OK: last successful run ended 40m0s ago on vm-3 (term 42) | age=2400s;;3600 last_exit=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideCheck(checkInput{Runs: tt.runs, Now: checkNow, Warning: tt.w, Critical: tt.c})
			if got.State != tt.state || got.Line != tt.line {
				t.Errorf("decideCheck =\n  %d %q\nwant\n  %d %q", got.State, got.Line, tt.state, tt.line)
			}
		})
	}
}

// A scheduled lease: CRITICAL when an occurrence did not start although a
// later one is due, or within --starting-deadline; WARNING when the last
// one failed; -v and -vv say more.
func TestCheckDecideSchedule(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// run is a run of occurrence occ that started 10 s after it and took 1 s.
	run := func(h string, term int64, occ string, exit int) lease.Run {
		return histRun(h, term, at(occ).Add(10*time.Second), exit)
	}
	const every5 = "*/5 * * * *"
	tests := []struct {
		name       string
		spec, last string // the schedule and the occurrence last started
		now        string
		runs       []lease.Run
		deadline   time.Duration
		verbose    int
		state      checkState
		line       string
	}{
		{"ok: the last occurrence ran", every5, "2026-11-23T11:55:00Z", "2026-11-23T11:59:00Z",
			[]lease.Run{run("vm-1", 7, "2026-11-23T11:55:00Z", 0)}, 0, 0, stateOK,
			"OK: last successful run ended 3m49s ago on vm-1 (term 7) | age=229s;;93600 last_exit=0"},
		{"ok: the occurrence due is about to run", every5, "2026-11-23T11:55:00Z", "2026-11-23T12:00:30Z",
			[]lease.Run{run("vm-1", 7, "2026-11-23T11:55:00Z", 0)}, 10 * time.Minute, 0, stateOK,
			"OK: last successful run ended 5m19s ago on vm-1 (term 7) | age=319s;;93600 last_exit=0"},
		{"critical: an occurrence never started and a later one is due", every5, "2026-11-23T11:50:00Z", "2026-11-23T12:00:30Z",
			[]lease.Run{run("vm-1", 7, "2026-11-23T11:50:00Z", 0)}, 0, 0, stateCritical,
			`CRITICAL: the occurrence 2026-11-23T11:55:00Z of schedule "*/5 * * * *" never started (2 occurrences since the last started one did not start); last successful run ended 10m19s ago on vm-1 (term 7) | age=619s;;93600 last_exit=0`},
		{"critical: past the starting deadline", "0 * * * *", "2026-11-23T10:00:00Z", "2026-11-23T11:10:01Z",
			[]lease.Run{run("vm-1", 7, "2026-11-23T10:00:00Z", 0)}, 10 * time.Minute, 0, stateCritical,
			`CRITICAL: the occurrence 2026-11-23T11:00:00Z of schedule "0 * * * *" did not start within --starting-deadline 10m0s; last successful run ended 1h9m50s ago on vm-1 (term 7) | age=4190s;;93600 last_exit=0`},
		{"ok: at the starting deadline", "0 * * * *", "2026-11-23T10:00:00Z", "2026-11-23T11:10:00Z",
			[]lease.Run{run("vm-1", 7, "2026-11-23T10:00:00Z", 0)}, 10 * time.Minute, 0, stateOK,
			"OK: last successful run ended 1h9m49s ago on vm-1 (term 7) | age=4189s;;93600 last_exit=0"},
		{"warning: the last one failed", every5, "2026-11-23T11:55:00Z", "2026-11-23T11:59:00Z",
			[]lease.Run{run("vm-2", 8, "2026-11-23T11:55:00Z", 3), run("vm-1", 7, "2026-11-23T11:50:00Z", 0)}, 0, 0, stateWarning,
			"WARNING: last successful run ended 8m49s ago on vm-1 (term 7), but a later run failed: exit 3 on vm-2 (term 8) at 2026-11-23T11:55:11Z (3m49s ago) | age=529s;;93600 last_exit=3"},
		// New York's fall-back night: the second 01:30 is the occurrence
		// that started at the first; it is neither due nor late.
		{"ok: the repeated 01:30 is not due again", "CRON_TZ=America/New_York 30 1 * * *", "2026-11-01T05:30:00Z", "2026-11-01T06:45:00Z",
			[]lease.Run{run("vm-1", 7, "2026-11-01T05:30:00Z", 0)}, 10 * time.Minute, 0, stateOK,
			"OK: last successful run ended 1h14m49s ago on vm-1 (term 7) | age=4489s;;93600 last_exit=0"},
		{"-v: the schedule and the runs on the line", every5, "2026-11-23T11:55:00Z", "2026-11-23T12:00:30Z",
			[]lease.Run{run("vm-1", 7, "2026-11-23T11:55:00Z", 0), run("vm-2", 6, "2026-11-23T11:50:00Z", 1)}, 0, 1, stateOK,
			`OK: last successful run ended 5m19s ago on vm-1 (term 7); schedule "*/5 * * * *": occurrence 2026-11-23T11:55:00Z started last, 2026-11-23T12:00:00Z (30s ago) due and not started yet, next 2026-11-23T12:05:00Z; 2 runs recorded, 1 failed | age=319s;;93600 last_exit=0`},
		{"-vv: a line per run", every5, "2026-11-23T11:55:00Z", "2026-11-23T11:59:00Z",
			[]lease.Run{run("vm-1", 7, "2026-11-23T11:55:00Z", -2), run("vm-2", 6, "2026-11-23T11:50:00Z", -1), run("vm-1", 5, "2026-11-23T11:45:00Z", 0)}, 0, 2, stateWarning,
			`WARNING: last successful run ended 13m49s ago on vm-1 (term 5), but a later run failed: lost its lease before recording its end, on vm-2 (term 6), started 2026-11-23T11:50:10Z (8m50s ago); a run is in progress on vm-1 (term 7), started 3m50s ago; schedule "*/5 * * * *": occurrence 2026-11-23T11:55:00Z started last, next 2026-11-23T12:00:00Z; 3 runs recorded, 1 failed | age=829s;;93600 last_exit=U` +
				"\nrun on vm-1 (term 7): started 2026-11-23T11:55:10Z (3m50s ago), running" +
				"\nrun on vm-2 (term 6): started 2026-11-23T11:50:10Z (8m50s ago), lost its lease before recording its end" +
				"\nrun on vm-1 (term 5): started 2026-11-23T11:45:10Z (13m50s ago), ended 2026-11-23T11:45:11Z (13m49s ago), exit 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := at(tt.now)
			v, ok := viewSchedule(&lease.Properties{Schedule: tt.spec, Occurrence: at(tt.last), Created: at("2026-01-01T00:00:00Z")}, now)
			if !ok {
				t.Fatal("no schedule view")
			}
			got := decideCheck(checkInput{Runs: tt.runs, Now: now, Critical: 26 * time.Hour, Schedule: &v, StartingDeadline: tt.deadline, Verbose: tt.verbose})
			if got.State != tt.state || got.Line != tt.line {
				t.Errorf("decideCheck =\n  %d %q\nwant\n  %d %q", got.State, got.Line, tt.state, tt.line)
			}
		})
	}
}
