package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/lease"
)

func TestTriggerUsage(t *testing.T) {
	t.Setenv("LEADERRUN_LEASE", "")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"trigger"}, "lease name"},
		{[]string{"trigger", "-l", "x", "-w", "1m"}, "--timeout needs --wait"},
		{[]string{"trigger", "-l", "x", "--wait", "-w", "-1s"}, "invalid --timeout"},
		{[]string{"trigger", "-l", "x", "--reason", "tab\there"}, "printable ASCII"},
		{[]string{"trigger", "-l", "x", "--reason", strings.Repeat("r", 257)}, "longer than 256"},
		{[]string{"trigger", "-l", "x", "now"}, "unexpected arguments"},
	} {
		code, _, stderr := run(t, c.args...)
		if code != exit.Usage || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 64 and one line with %q", c.args, code, stderr, c.want)
		}
	}
}

// history says why each run ran, when any says: the attempt of a
// scheduled occurrence, a retry, a trigger by whom and why.
func TestHistoryCauses(t *testing.T) {
	occ := time.Date(2026, 3, 10, 3, 0, 0, 0, time.UTC)
	end := func(s time.Time, code int) lease.Run {
		return lease.Run{Holder: "vm-1", Term: 1, Start: s, End: s.Add(time.Minute), ExitCode: &code}
	}
	manual := end(occ.Add(3*time.Hour), 0)
	manual.Term, manual.Cause = 4, &lease.Cause{Trigger: lease.TriggerManual, Attempt: 1, Occurrence: occ.Add(3 * time.Hour), Missed: -1, By: "alice@laptop", Reason: "the fix"}
	retry := end(occ.Add(2*time.Minute), 0)
	retry.Term, retry.Cause = 3, &lease.Cause{Trigger: lease.TriggerRetry, Attempt: 2, Occurrence: occ, Missed: 0}
	first := end(occ, 1)
	first.Term, first.Cause = 2, &lease.Cause{Trigger: lease.TriggerSchedule, Attempt: 1, Occurrence: occ, Missed: 0}
	plain := end(occ.Add(-time.Hour), 0)
	runs := []lease.Run{manual, retry, first, plain}
	exited := func(r lease.Run) lease.Fate { return lease.Fate{Kind: lease.FateExited, Code: *r.ExitCode} }

	var b bytes.Buffer
	if err := writeRunsText(&b, 200, runs, exited); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	for i, want := range []string{"WHY", "manual by alice@laptop: the fix", "retry 2 of 2026-03-10T03:00Z", "schedule 2026-03-10T03:00Z", "  -"} {
		if !strings.HasSuffix(lines[i], want) {
			t.Errorf("line %d: %q, want it to end in %q", i+1, lines[i], want)
		}
	}
	b.Reset()
	if err := writeRunsText(&b, 200, []lease.Run{plain}, exited); err != nil || strings.Contains(b.String(), "WHY") {
		t.Errorf("no run with a cause: %q", b.String())
	}

	out, err := json.Marshal(runsJSON(runs, exited))
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got[0]["trigger"] != "manual" || got[0]["triggeredBy"] != "alice@laptop" || got[0]["reason"] != "the fix" ||
		got[1]["trigger"] != "retry" || got[1]["attempt"] != 2.0 || got[1]["occurrence"] != "2026-03-10T03:00:00Z" {
		t.Errorf("history -o json: %s", out)
	}
	if _, ok := got[3]["trigger"]; ok {
		t.Errorf("a run without a cause has its keys: %v", got[3])
	}
}
