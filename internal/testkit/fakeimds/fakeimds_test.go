package fakeimds

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// get makes a GET with the header, as the metadata service's clients must.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Metadata", "true")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const (
	namePath   = "/metadata/instance/compute/name?api-version=2021-02-01&format=text"
	eventsPath = "/metadata/scheduledevents?api-version=2020-07-01"
)

type wireDoc struct {
	DocumentIncarnation int
	Events              []map[string]any
}

func events(t *testing.T, s *Server) wireDoc {
	t.Helper()
	code, body := get(t, s.URL()+eventsPath)
	if code != 200 {
		t.Fatalf("events: %d %s", code, body)
	}
	var d wireDoc
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return d
}

func TestServer(t *testing.T) {
	s, err := New("vm-1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %s is not on 127.0.0.1", s.URL())
	}
	if code, body := get(t, s.URL()+namePath); code != 200 || body != "vm-1" {
		t.Errorf("name: %d %q", code, body)
	}
	d0 := events(t, s)
	if len(d0.Events) != 0 || d0.Events == nil {
		t.Errorf("initial document %+v, want an empty (not null) event list", d0)
	}

	nb := time.Date(2026, 11, 23, 12, 0, 30, 0, time.UTC)
	id := s.AddPreempt("vm-1", nb)
	d1 := events(t, s)
	if d1.DocumentIncarnation != d0.DocumentIncarnation+1 || len(d1.Events) != 1 {
		t.Fatalf("after AddPreempt: %+v", d1)
	}
	e := d1.Events[0]
	want := map[string]any{"EventId": id, "EventType": "Preempt", "ResourceType": "VirtualMachine",
		"EventStatus": "Scheduled", "NotBefore": "Mon, 23 Nov 2026 12:00:30 GMT", "EventSource": "Platform",
		"DurationInSeconds": float64(-1)}
	for k, v := range want {
		if e[k] != v {
			t.Errorf("%s = %v, want %v", k, e[k], v)
		}
	}
	if fmt.Sprint(e["Resources"]) != "[vm-1]" {
		t.Errorf("Resources = %v", e["Resources"])
	}

	s.AddEvent(Event{Type: "Reboot", Resources: []string{"vm-1"}, Status: "Started"})
	if d := events(t, s); len(d.Events) != 2 || d.Events[1]["NotBefore"] != "" || d.Events[0]["EventId"] == d.Events[1]["EventId"] {
		t.Errorf("after AddEvent: %+v", d)
	}
	s.Clear()
	if d := events(t, s); len(d.Events) != 0 || d.DocumentIncarnation != d1.DocumentIncarnation+2 {
		t.Errorf("after Clear: %+v", d)
	}

	s.SetRaw("{not json")
	if _, body := get(t, s.URL()+eventsPath); body != "{not json" {
		t.Errorf("raw: %q", body)
	}
	s.SetFailure(503)
	if code, _ := get(t, s.URL()+namePath); code != 503 {
		t.Errorf("failure: %d", code)
	}
	s.SetFailure(0)
	if code, _ := get(t, s.URL()+"/metadata/instance"); code != 404 {
		t.Errorf("other path: %d", code)
	}
	if c := s.Counts(); c != (Counts{Names: 2, Events: 5, Other: 1}) || s.Posted() {
		t.Errorf("counts %+v", c)
	}
}

func TestDelayEndsOnClose(t *testing.T) {
	s, err := New("vm-1")
	if err != nil {
		t.Fatal(err)
	}
	s.SetDelay(time.Hour)
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+namePath, nil)
		req.Header.Set("Metadata", "true")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for s.Counts().Names == 0 {
		time.Sleep(time.Millisecond)
	}
	_ = s.Close()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a delayed request outlived Close by a minute")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "example.com:80", "nonsense"} {
		if s, err := Listen(addr, "vm"); err == nil {
			s.Close()
			t.Errorf("Listen(%q) accepted", addr)
		}
	}
}

// TestScript drives ScriptCmd from testdata/*.txtar, with a "get" command
// that prints an answer of the fake.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"fakeimds": ScriptCmd,
			"get": func(ts *testscript.TestScript, neg bool, args []string) {
				req, err := http.NewRequest(args[0], args[1], nil)
				ts.Check(err)
				req.Header.Set("Metadata", "true")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					if !neg {
						ts.Fatalf("get: %v", err)
					}
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				fmt.Fprintf(ts.Stdout(), "%d %s\n", resp.StatusCode, b)
			},
		},
	})
}
