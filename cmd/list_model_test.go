package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/leaderrun/leaderrun/lease"
)

var listNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func listStamp(d time.Duration) string { return listNow.Add(-d).Format(time.RFC3339) }

func listURL(blob string) string { return "https://acct.blob.core.windows.net/leaderrun/" + blob }

// fixtureBlob is one blob of a listing as the service returns it.
type fixtureBlob struct {
	Name     string
	State    lease.State
	Metadata map[string]string
}

// listViews is listFixture as lease.View groups it.
func listViews() []lease.View {
	var listed []lease.Listed
	for _, b := range listFixture() {
		listed = append(listed, lease.Listed{Name: b.Name, Props: lease.PropertiesOf(b.State, b.Metadata, listNow)})
	}
	return lease.Group(listed, listNow, listURL)
}

// listFixture is one listing with every kind of blob; metadata keys come
// back capitalised from the service.
func listFixture() []fixtureBlob {
	return []fixtureBlob{
		{Name: "patch/2026-11~done/vm-2"},
		{Name: "cron/report", State: lease.StateLeased, Metadata: map[string]string{
			"Holder": "vm-2", "Term": "43", "Acquiredat": listStamp(2 * time.Minute),
			"Lastrunholder": "vm-2", "Lastrunterm": "43", "Lastrunstart": listStamp(2 * time.Minute),
			"History0": "42," + unixText(listNow.Add(-10*time.Minute)) + "," + unixText(listNow.Add(-5*time.Minute)) + ",0,vm-3",
		}},
		{Name: "deploy/migrate", State: lease.StateAvailable, Metadata: map[string]string{
			"Holder": strings.Repeat("h", 50), "Term": "7", "Acquiredat": listStamp(3 * time.Hour),
			"Lastrunholder": strings.Repeat("h", 50), "Lastrunterm": "7", "Lastrunstart": listStamp(3 * time.Hour),
		}},
		{Name: "patch/2026-11", State: lease.StateLeased, Metadata: map[string]string{
			"holder": "vm-1", "term": "3", "acquiredat": listStamp(90 * time.Second), "slots": "3",
			"lastrunholder": "vm-1", "lastrunterm": "3", "lastrunstart": listStamp(90 * time.Second),
		}},
		{Name: "patch/2026-11~slot-1", State: lease.StateExpired, Metadata: map[string]string{
			"holder": "vm-3", "term": "2", "acquiredat": listStamp(50 * time.Hour),
			"lastrunholder": "vm-3", "lastrunterm": "2", "lastrunstart": listStamp(50 * time.Hour),
			"lastrunend": listStamp(49 * time.Hour), "lastexit": "1",
		}},
		{Name: "patch/2026-11~done/vm-1"},
		{Name: "~done/patch/2026-11~vm-1"}, // done before and after an upgrade
		{Name: "~done/patch/2026-11~vm-3"},
		{Name: "maint~pause", Metadata: map[string]string{"Reason": "db upgrade", "Since": listStamp(time.Minute), "Until": listNow.Add(time.Hour).Format(time.RFC3339)}},
		{Name: "old~pause", Metadata: map[string]string{"until": listStamp(time.Second)}},
		{Name: "old", State: lease.StateAvailable},
		{Name: "stray~thing"},
	}
}

func unixText(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func TestListGroup(t *testing.T) {
	got := listViews()
	var names []string
	for _, l := range got {
		names = append(names, l.Name)
	}
	if want := "cron/report deploy/migrate maint old patch/2026-11"; strings.Join(names, " ") != want {
		t.Fatalf("leases = %q, want %q (sorted; markers grouped; a foreign NAME~thing left out)", strings.Join(names, " "), want)
	}
	patch := got[4]
	if len(patch.Slots) != 2 || patch.Slots[0].Index != 0 || patch.Slots[1].Index != 1 || patch.SlotCount != 3 {
		t.Errorf("patch slots = %+v (count %d), want slots 0 and 1 of 3", patch.Slots, patch.SlotCount)
	}
	if strings.Join(patch.DoneHosts, ",") != "vm-1,vm-2,vm-3" {
		t.Errorf("done hosts = %v, want [vm-1 vm-2 vm-3]", patch.DoneHosts)
	}
	if maint := got[2]; len(maint.Slots) != 0 || maint.Pause == nil || maint.Pause.Reason != "db upgrade" {
		t.Errorf("maint = %+v, want a pause and no slot", maint)
	}
}

func TestListText(t *testing.T) {
	var b bytes.Buffer
	if err := writeListText(&b, 1000, listViews()); err != nil {
		t.Fatal(err)
	}
	want := `LEASE           STATE       HOLDER                                              TERM  SINCE   LAST RUN                        NOTES
cron/report     leased      vm-2                                                43    2m ago  exited 0, 5m ago on vm-3        -
deploy/migrate  available   hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh  7     3h ago  lost its lease, started 3h ago  -
maint           never held  -                                                   -     -       -                               PAUSED until 2026-11-23T13:00:00Z: db upgrade
old             available   -                                                   -     -       -                               -
patch/2026-11   1/3 leased  -                                                   -     -       -                               3 hosts done
  slot 0        leased      vm-1                                                3     1m ago  -
  slot 1        expired     vm-3                                                2     2d ago  exited 1, 2d ago
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

// longViews is listViews with a lease of a 1,000-character name and one
// paused with a 250-character reason.
func longViews() ([]lease.View, string, string) {
	name := strings.Repeat("n", 1000)
	reason := strings.Repeat("r", 250)
	var listed []lease.Listed
	for _, b := range listFixture() {
		listed = append(listed, lease.Listed{Name: b.Name, Props: lease.PropertiesOf(b.State, b.Metadata, listNow)})
	}
	listed = append(listed,
		lease.Listed{Name: name, Props: lease.PropertiesOf(lease.StateLeased, map[string]string{"holder": strings.Repeat("v", 200), "term": "2"}, listNow)},
		lease.Listed{Name: "frozen~pause", Props: lease.PropertiesOf(lease.StateAvailable, map[string]string{"reason": reason}, listNow)})
	return lease.Group(listed, listNow, listURL), name, reason
}

// The table keeps within the terminal, whatever one name or note holds:
// the long cells are cut with "…", the other rows keep theirs, and JSON
// keeps every value whole.
func TestListTextWithinTheTerminal(t *testing.T) {
	views, name, reason := longViews()
	for _, width := range []int{80, 100, 132} {
		var b bytes.Buffer
		if err := writeListText(&b, width, views); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("width %d: a line of %d: %q", width, n, l)
			}
		}
		if !strings.HasPrefix(lines[0], "LEASE ") || !strings.Contains(lines[0], "NOTES") {
			t.Errorf("width %d: header %q", width, lines[0])
		}
		if !regexp.MustCompile(`(?m)^cron/report +leased +vm-2 +43 +2m ago +exited 0`).MatchString(b.String()) {
			t.Errorf("width %d: the cron/report row is not whole:\n%s", width, b.String())
		}
		if !regexp.MustCompile(`(?m)^nnnn+… +leased +vvv+… +2 `).MatchString(b.String()) {
			t.Errorf("width %d: the long name and holder are not cut:\n%s", width, b.String())
		}
		if !regexp.MustCompile(`(?m)^frozen +never held .* PAUSED: rrr+…$`).MatchString(b.String()) {
			t.Errorf("width %d: the long note is not cut:\n%s", width, b.String())
		}
	}
	var b bytes.Buffer
	if err := writeJSON(&b, listJSON(views)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"lease": "`+name+`"`) || !strings.Contains(b.String(), `"reason": "`+reason+`"`) {
		t.Error("list -o json does not keep the long name and reason whole")
	}
}

// status keeps within the terminal too, and its slot table has a header.
func TestStatusTextWithinTheTerminal(t *testing.T) {
	views, name, _ := longViews()
	for _, v := range views {
		var b bytes.Buffer
		if err := writeStatusText(&b, 80, v.Name, &v); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			if n := utf8.RuneCountInString(l); n > 80 {
				t.Errorf("%.20s: a line of %d: %q", v.Name, n, l)
			}
		}
		if v.Name == name && !regexp.MustCompile(`(?m)^lease: +nnnn+…$`).MatchString(b.String()) {
			t.Errorf("the long name is not cut:\n%s", b.String())
		}
		if v.Name == "patch/2026-11" {
			want := `  SLOT  STATE       HOLDER  TERM  SINCE   LAST RUN
  0     leased      vm-1    3     1m ago  -
  1     expired     vm-3    2     2d ago  exited 1, 2d ago
  2     never held  -       -     -       -
`
			if !strings.HasSuffix(b.String(), "slots:      1 of 3 leased\n"+want) {
				t.Errorf("status of patch/2026-11:\n%s\nwant it to end in its slots:\n%s", b.String(), want)
			}
		}
	}
}

// The width: COLUMNS when it is a number, else the terminal's, else 80.
func TestOutputWidth(t *testing.T) {
	for cols, want := range map[string]int{"": 80, "132": 132, "40": 40, "wide": 80, "0": 80, "-3": 80} {
		t.Setenv("COLUMNS", cols)
		if got := outputWidth(&bytes.Buffer{}); got != want {
			t.Errorf("COLUMNS=%q: width %d, want %d", cols, got, want)
		}
	}
}

// A run cut by an operator, and every other fate, read the same in status,
// list and history, text and JSON: one function names them.
func TestFateInEveryRendering(t *testing.T) {
	start := listNow.Add(-19 * time.Second)
	run := map[string]string{"holder": "vm-1", "term": "5", "lastrunholder": "vm-1", "lastrunterm": "5", "lastrunstart": start.Format(time.RFC3339)}
	drain := map[string]string{"reason": "moving", "since": listNow.Add(-5 * time.Second).Format(time.RFC3339), "drain": "true"}
	for _, tc := range []struct {
		name  string
		state lease.State
		pause map[string]string
		want  string
	}{
		{"break", lease.StateBreaking, nil, "broken by an operator"},
		{"pause --drain", lease.StateAvailable, drain, "drained"},
		{"lost", lease.StateExpired, nil, "lost its lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listed := []lease.Listed{{Name: "job", Props: lease.PropertiesOf(tc.state, run, listNow)}}
			if tc.pause != nil {
				listed = append(listed, lease.Listed{Name: "job~pause", Props: lease.PropertiesOf(lease.StateAvailable, tc.pause, listNow)})
			}
			v := &lease.Group(listed, listNow, listURL)[0]
			var status, list, history, js, hjs bytes.Buffer
			if err := errors.Join(writeStatusText(&status, 80, "job", v), writeListText(&list, 200, []lease.View{*v}),
				writeHistoryText(&history, 80, v), writeJSON(&js, toLeaseStatusJSON(v)), writeJSON(&hjs, historyJSON(v))); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(status.String(), "last run:  "+tc.want+" on vm-1\n") {
				t.Errorf("status:\n%s\nwant the last run %s", status.String(), tc.want)
			}
			if !regexp.MustCompile(`(?m)^job +` + string(tc.state) + ` +vm-1 +5 +- +` + tc.want + `, started 19s ago +`).MatchString(list.String()) {
				t.Errorf("list:\n%s\nwant the last run %s", list.String(), tc.want)
			}
			if !regexp.MustCompile(`(?m)^vm-1 +5 +.* +- +` + tc.want + `$`).MatchString(history.String()) {
				t.Errorf("history:\n%s\nwant the run %s", history.String(), tc.want)
			}
			fate := `"running": false,\s+"fate": "` + tc.want + `"`
			if !regexp.MustCompile(fate).MatchString(js.String()) || !regexp.MustCompile(fate).MatchString(hjs.String()) {
				t.Errorf("JSON:\n%s\n%s\nwant running false and the fate %s", js.String(), hjs.String(), tc.want)
			}
		})
	}
}

func TestListJSON(t *testing.T) {
	var b bytes.Buffer
	if err := writeJSON(&b, listJSON(listViews())); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v in %s", err, b.String())
	}
	if len(got) != 5 {
		t.Fatalf("%d leases, want 5: %s", len(got), b.String())
	}
	byName := map[string]map[string]any{}
	for _, l := range got {
		byName[l["lease"].(string)] = l
		for _, k := range []string{"url", "state", "holder", "term", "acquiredAt", "lastRun", "pause"} {
			if _, ok := l[k]; !ok {
				t.Errorf("lease %v lacks %q", l["lease"], k)
			}
		}
	}
	cron := byName["cron/report"]
	if cron["url"] != listURL("cron/report") || cron["state"] != "leased" || cron["term"] != 43.0 || cron["pause"] != nil {
		t.Errorf("cron/report = %v", cron)
	}
	if _, has := cron["slots"]; has {
		t.Errorf("a lease of one slot has no slots array: %v", cron)
	}
	maint := byName["maint"]
	if maint["state"] != "absent" || maint["url"] != listURL("maint") {
		t.Errorf("a lease known only from its pause marker = %v, want state absent at its own URL", maint)
	}
	pause, _ := maint["pause"].(map[string]any)
	if pause["reason"] != "db upgrade" || pause["until"] != "2026-11-23T13:00:00Z" || pause["since"] != "2026-11-23T11:59:00Z" {
		t.Errorf("maint pause = %v", maint["pause"])
	}
	if byName["old"]["pause"] != nil {
		t.Errorf("a pause that ran out shows as %v, want null", byName["old"]["pause"])
	}
	patch := byName["patch/2026-11"]
	slots, _ := patch["slots"].([]any)
	if len(slots) != 2 {
		t.Fatalf("patch slots = %v, want 2", patch["slots"])
	}
	s1 := slots[1].(map[string]any)
	if s1["slot"] != 1.0 || s1["url"] != listURL("patch/2026-11~slot-1") || s1["state"] != "expired" || s1["holder"] != "vm-3" {
		t.Errorf("slot 1 = %v", s1)
	}
	if lr, _ := s1["lastRun"].(map[string]any); lr["exitCode"] != 1.0 {
		t.Errorf("slot 1 lastRun = %v", s1["lastRun"])
	}
	if hosts, _ := patch["doneHosts"].([]any); len(hosts) != 3 || hosts[0] != "vm-1" || hosts[2] != "vm-3" {
		t.Errorf("doneHosts = %v", patch["doneHosts"])
	}

	b.Reset()
	if err := writeJSON(&b, listJSON(nil)); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("an empty listing prints %q, want []", b.String())
	}
}

func TestListShortAgo(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s ago", 59 * time.Second: "59s ago", time.Minute: "1m ago", 59*time.Minute + 59*time.Second: "59m ago",
		47 * time.Hour: "47h ago", 48 * time.Hour: "2d ago",
	} {
		if got := shortAgo(listNow.Add(-d), listNow); got != want {
			t.Errorf("shortAgo(%s) = %q, want %q", d, got, want)
		}
	}
}
