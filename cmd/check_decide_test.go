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
			got := decideCheck(checkInput{Runs: tt.runs, LastSuccess: tt.last, Now: tt.now, MaxAge: maxAge})
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
