package imds

import (
	"errors"
	"testing"
	"time"
)

func TestParseNotBefore(t *testing.T) {
	want := time.Date(2016, 9, 19, 18, 29, 47, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"Mon, 19 Sep 2016 18:29:47 GMT", want},
		{"  Mon, 19 Sep 2016 18:29:47 GMT ", want},
		{"Monday, 19-Sep-16 18:29:47 GMT", want}, // RFC 850, another HTTP date form
		{"", time.Time{}},                        // empty once Started
		{"soon", time.Time{}},
		{"2016-09-19T18:29:47Z", time.Time{}}, // not what the service sends
		{"Mon, 19 Sep 2016 25:29:47 GMT", time.Time{}},
		{"Mon, 19 Sep 99999 18:29:47 GMT", time.Time{}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got := ParseNotBefore(tc.in)
			if !got.Equal(tc.want) {
				t.Errorf("ParseNotBefore(%q) = %v, want %v", tc.in, got, tc.want)
			}
			if !got.IsZero() && got.Location() != time.UTC {
				t.Errorf("ParseNotBefore(%q) is in %v, want UTC", tc.in, got.Location())
			}
		})
	}
}

func TestStartsBy(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	later := now.Add(30 * time.Second)
	for _, tc := range []struct {
		name      string
		e         Event
		want      time.Time
		malformed bool
	}{
		{"scheduled", Event{NotBefore: later, NotBeforeText: later.Format(time.RFC1123)}, later, false},
		{"started, empty", Event{EventStatus: StatusStarted}, now, false},
		{"malformed is now, not far future", Event{NotBeforeText: "Mon, 99 Foo 9999"}, now, true},
		{"past NotBefore stays past", Event{NotBefore: now.Add(-time.Minute), NotBeforeText: "x"}, now.Add(-time.Minute), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.e.StartsBy(now); !got.Equal(tc.want) {
				t.Errorf("StartsBy = %v, want %v", got, tc.want)
			}
			if got := tc.e.NotBeforeMalformed(); got != tc.malformed {
				t.Errorf("NotBeforeMalformed = %v, want %v", got, tc.malformed)
			}
		})
	}
}

func TestConcerns(t *testing.T) {
	ev := func(typ, status string, resources ...string) Event {
		return Event{EventType: typ, EventStatus: status, Resources: resources}
	}
	for _, tc := range []struct {
		name string
		e    Event
		vm   string
		want bool
	}{
		{"preempt scheduled", ev(TypePreempt, StatusScheduled, "vm-1"), "vm-1", true},
		{"preempt started", ev(TypePreempt, StatusStarted, "vm-1"), "vm-1", true},
		{"reboot", ev(TypeReboot, StatusScheduled, "vm-1"), "vm-1", true},
		{"redeploy", ev(TypeRedeploy, StatusScheduled, "vm-1"), "vm-1", true},
		{"freeze", ev(TypeFreeze, StatusScheduled, "vm-1"), "vm-1", true},
		{"terminate", ev(TypeTerminate, StatusScheduled, "vm-1"), "vm-1", true},
		{"one of several resources", ev(TypeFreeze, StatusScheduled, "vm-0", "vm-1", "vm-2"), "vm-1", true},
		{"case-insensitive name", ev(TypeFreeze, StatusScheduled, "VM-1"), "vm-1", true},
		{"another VM", ev(TypePreempt, StatusScheduled, "vm-2"), "vm-1", false},
		{"name is a prefix only", ev(TypePreempt, StatusScheduled, "vm-10"), "vm-1", false},
		{"no resources", ev(TypePreempt, StatusScheduled), "vm-1", false},
		{"unknown VM name", ev(TypePreempt, StatusScheduled, ""), "", false},
		{"completed", ev(TypePreempt, "Completed", "vm-1"), "vm-1", false},
		{"canceled", ev(TypeReboot, "Canceled", "vm-1"), "vm-1", false},
		{"empty status", ev(TypeReboot, "", "vm-1"), "vm-1", false},
		{"status is case-sensitive", ev(TypeReboot, "scheduled", "vm-1"), "vm-1", false},
		{"unknown type", ev("LiveMigration", StatusScheduled, "vm-1"), "vm-1", false},
		{"type is case-sensitive", ev("preempt", StatusScheduled, "vm-1"), "vm-1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.e.Concerns(tc.vm); got != tc.want {
				t.Errorf("%+v.Concerns(%q) = %v, want %v", tc.e, tc.vm, got, tc.want)
			}
		})
	}
}

func TestEarliest(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ev := func(id, typ, vm string, notBefore time.Duration) Event {
		e := Event{EventID: id, EventType: typ, EventStatus: StatusScheduled, Resources: []string{vm}}
		if notBefore >= 0 {
			e.NotBefore = now.Add(notBefore)
		}
		return e
	}
	const none = -1
	for _, tc := range []struct {
		name   string
		events []Event
		want   string // EventID, "" for none
	}{
		{"no events", nil, ""},
		{"only another VM", []Event{ev("a", TypePreempt, "vm-2", time.Minute)}, ""},
		{"one", []Event{ev("a", TypeFreeze, "vm-1", 15*time.Minute)}, "a"},
		{"earliest NotBefore wins", []Event{
			ev("freeze", TypeFreeze, "vm-1", 15*time.Minute),
			ev("preempt", TypePreempt, "vm-1", 30*time.Second),
			ev("other", TypePreempt, "vm-2", time.Second),
		}, "preempt"},
		{"no NotBefore is now", []Event{
			ev("soon", TypePreempt, "vm-1", 30*time.Second),
			ev("started", TypeReboot, "vm-1", none),
		}, "started"},
		{"tie: first listed", []Event{
			ev("x", TypeReboot, "vm-1", time.Minute),
			ev("y", TypeRedeploy, "vm-1", time.Minute),
		}, "x"},
		{"non-concerning earlier event ignored", []Event{
			{EventID: "done", EventType: TypePreempt, EventStatus: "Completed", Resources: []string{"vm-1"}},
			ev("later", TypeTerminate, "vm-1", 10*time.Minute),
		}, "later"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Document{DocumentIncarnation: 3, Events: tc.events}.Earliest("vm-1", now)
			if ok != (tc.want != "") || got.EventID != tc.want {
				t.Errorf("Earliest = %q, %v; want %q", got.EventID, ok, tc.want)
			}
		})
	}
}

func TestChanged(t *testing.T) {
	doc := func(n int) Document { return Document{DocumentIncarnation: n} }
	for _, tc := range []struct {
		name    string
		prev    Document
		hadPrev bool
		next    Document
		want    bool
	}{
		{"first answer", Document{}, false, doc(0), true},
		{"first answer, any incarnation", Document{}, false, doc(7), true},
		{"same incarnation", doc(7), true, doc(7), false},
		{"same incarnation, other events (the service's word stands)", doc(7), true,
			Document{DocumentIncarnation: 7, Events: []Event{{EventID: "x"}}}, false},
		{"incarnation up", doc(7), true, doc(8), true},
		{"incarnation down (service restarted)", doc(7), true, doc(1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Changed(tc.prev, tc.hadPrev, tc.next); got != tc.want {
				t.Errorf("Changed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseDocument(t *testing.T) {
	body := `{"DocumentIncarnation": 4, "Events": [
		{"EventId": "602d9444-d2cd-49c7-8624-8643e7171297", "EventType": "Preempt",
		 "ResourceType": "VirtualMachine", "Resources": ["vm-1"], "EventStatus": "Scheduled",
		 "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT", "Description": "evicted",
		 "EventSource": "Platform", "DurationInSeconds": 0},
		{"EventId": "b", "EventType": "Reboot", "Resources": ["vm-1"], "EventStatus": "Started",
		 "NotBefore": ""},
		{"EventId": "c", "EventType": "Freeze", "Resources": ["vm-1"], "EventStatus": "Scheduled",
		 "NotBefore": "tomorrow", "DurationInSeconds": 5}]}`
	d, err := parseDocument([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if d.DocumentIncarnation != 4 || len(d.Events) != 3 {
		t.Fatalf("got %+v", d)
	}
	a, b, c := d.Events[0], d.Events[1], d.Events[2]
	if a.EventID != "602d9444-d2cd-49c7-8624-8643e7171297" || a.EventType != TypePreempt ||
		a.ResourceType != "VirtualMachine" || len(a.Resources) != 1 || a.Resources[0] != "vm-1" ||
		a.EventStatus != StatusScheduled || a.Description != "evicted" || a.EventSource != "Platform" ||
		a.DurationInSeconds != 0 || !a.NotBefore.Equal(time.Date(2016, 9, 19, 18, 29, 47, 0, time.UTC)) {
		t.Errorf("first event = %+v", a)
	}
	if !b.NotBefore.IsZero() || b.NotBeforeMalformed() || b.DurationInSeconds != -1 {
		t.Errorf("started event = %+v (want zero NotBefore, not malformed, duration -1)", b)
	}
	if !c.NotBefore.IsZero() || !c.NotBeforeMalformed() || c.NotBeforeText != "tomorrow" || c.DurationInSeconds != 5 {
		t.Errorf("malformed event = %+v", c)
	}

	for _, bad := range []string{``, `{`, `[]`, `{"Events": []}`, `{"DocumentIncarnation": "1"}`,
		`{"DocumentIncarnation": 1, "Events": {}}`} {
		if _, err := parseDocument([]byte(bad)); !errors.Is(err, ErrBadAnswer) {
			t.Errorf("parseDocument(%q) = %v, want ErrBadAnswer", bad, err)
		}
	}
	if d, err := parseDocument([]byte(`{"DocumentIncarnation": 1, "Events": []}`)); err != nil || len(d.Events) != 0 {
		t.Errorf("empty document = %+v, %v", d, err)
	}
}
