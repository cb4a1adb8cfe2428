package imds

// The watcher's timing, under testing/synctest with an in-memory transport
// (real sockets do not run inside a synctest bubble).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
)

// memIMDS is an in-memory metadata service: an http.RoundTripper that fails
// the test on a request the client must never make.
type memIMDS struct {
	t  *testing.T
	mu sync.Mutex

	vm       string
	nameFail int // the next nameFail name requests answer 500
	status   int // when not 0, every request answers it
	hang     bool
	doc      string

	names, events int
}

func (m *memIMDS) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Header.Get("Metadata") != "true" || req.Body != nil && req.Body != http.NoBody {
		m.t.Errorf("unexpected request: %s %s, Metadata %q", req.Method, req.URL, req.Header.Get("Metadata"))
	}
	m.mu.Lock()
	hang, status := m.hang, m.status
	body := ""
	switch req.URL.Path {
	case "/metadata/instance/compute/name":
		m.names++
		body = m.vm
		if m.nameFail > 0 {
			m.nameFail--
			status = 500
		}
	case "/metadata/scheduledevents":
		m.events++
		body = m.doc
	default:
		m.t.Errorf("unexpected path %s", req.URL.Path)
	}
	m.mu.Unlock()
	if hang {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	if status == 0 {
		status = 200
	}
	return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(body)),
		Header: http.Header{}, Request: req}, nil
}

func (m *memIMDS) set(f func(m *memIMDS)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m)
}

func (m *memIMDS) counts() (names, events int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.names, m.events
}

// doc renders a document with one event per "TYPE:VM" (Scheduled, NotBefore
// a minute after the bubble's start).
func doc(incarnation int, events ...string) string {
	var parts []string
	for i, e := range events {
		typ, vm, _ := strings.Cut(e, ":")
		parts = append(parts, fmt.Sprintf(`{"EventId":"e%d-%d","EventType":%q,"ResourceType":"VirtualMachine",`+
			`"Resources":[%q],"EventStatus":"Scheduled","NotBefore":"Sat, 01 Jan 2000 00:01:00 GMT",`+
			`"Description":"","EventSource":"Platform","DurationInSeconds":-1}`, incarnation, i, typ, vm))
	}
	return fmt.Sprintf(`{"DocumentIncarnation":%d,"Events":[%s]}`, incarnation, strings.Join(parts, ","))
}

// logBuf collects log lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// startWatcher runs a watcher over m in the current bubble; the returned
// func stops it and checks that Run returned.
func startWatcher(t *testing.T, m *memIMDS, interval time.Duration) (*Watcher, *logBuf, func()) {
	t.Helper()
	logs := &logBuf{}
	log := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})
	c, err := NewClient(Config{Endpoint: "http://imds.test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	c.hc.Transport = m
	w, err := NewWatcher(c, WatcherConfig{PollInterval: interval, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return w, logs, func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestWatcherReadyAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &memIMDS{t: t, vm: "vm-1", doc: doc(1, "Preempt:vm-2")}
		w, _, stop := startWatcher(t, m, 0)
		defer stop()
		synctest.Wait()
		if !closed(w.Ready()) {
			t.Fatal("not ready after an instant answer")
		}
		if _, ok := w.Pending(); ok || w.VMName() != "vm-1" {
			t.Errorf("pending %v, vm %q: want none (the event is for another VM), vm-1", ok, w.VMName())
		}
		if closed(w.Appeared()) {
			t.Error("Appeared closed with no event for this VM")
		}
	})
}

// The first request after boot may take minutes: Ready closes when the
// request times out (2 s), within the contender's 2 s budget.
func TestWatcherReadyWhenHanging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &memIMDS{t: t, vm: "vm-1", doc: doc(1), hang: true}
		w, logs, stop := startWatcher(t, m, 0)
		defer stop()
		time.Sleep(DefaultTimeout - time.Millisecond)
		synctest.Wait()
		if closed(w.Ready()) {
			t.Fatal("ready before any answer or timeout")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !closed(w.Ready()) {
			t.Fatal("not ready when the first request timed out")
		}
		if _, ok := w.Pending(); ok {
			t.Error("an unreachable service counted as an event")
		}
		if n := logs.count("[WARN]"); n != 1 {
			t.Errorf("%d warnings, want 1", n)
		}
		// It answers at last. The second poll started at once after the
		// first (which took longer than the poll interval) and hangs until
		// 4 s; the third follows at once, and gets the name and the events.
		m.set(func(m *memIMDS) { m.hang, m.doc = false, doc(2, "Freeze:vm-1") })
		time.Sleep(DefaultTimeout - time.Millisecond)
		synctest.Wait()
		if _, ok := w.Pending(); ok {
			t.Fatal("pending before the third poll")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if e, ok := w.Pending(); !ok || e.EventType != TypeFreeze {
			t.Errorf("pending %+v, %v after recovery; want the Freeze", e, ok)
		}
		if n := logs.count("metadata service answering again"); n != 1 {
			t.Errorf("%d recovery lines, want 1", n)
		}
	})
}

func TestWatcherOneWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &memIMDS{t: t, vm: "vm-1", doc: doc(1), status: 503}
		w, logs, stop := startWatcher(t, m, 0)
		defer stop()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if !closed(w.Ready()) {
			t.Error("not ready after failed answers")
		}
		names, events := m.counts()
		if names != 11 || events != 0 {
			t.Errorf("%d name and %d events requests in 10 s, want the name asked every second (11), no events", names, events)
		}
		if n := logs.count("[WARN]"); n != 1 {
			t.Errorf("%d warnings over 11 failed polls, want 1:\n%s", n, logs.b.String())
		}
		if n := logs.count("still unavailable"); n != 10 {
			t.Errorf("%d debug lines, want 10", n)
		}
		m.set(func(m *memIMDS) { m.status = 0 })
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := logs.count("answering again"); n != 1 {
			t.Errorf("%d recovery lines, want 1", n)
		}
		// Failing again is worth a new warning.
		m.set(func(m *memIMDS) { m.status = 500 })
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := logs.count("[WARN]"); n != 2 {
			t.Errorf("%d warnings after a second outage, want 2", n)
		}
	})
}

func TestWatcherVMNameRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &memIMDS{t: t, vm: "VM-1", doc: doc(1, "Preempt:vm-1"), nameFail: 3}
		w, _, stop := startWatcher(t, m, 500*time.Millisecond)
		defer stop()
		synctest.Wait()
		if !closed(w.Ready()) || w.VMName() != "" {
			t.Fatalf("ready %v, vm %q after a failed first poll; want ready, no name", closed(w.Ready()), w.VMName())
		}
		time.Sleep(1500 * time.Millisecond) // polls at 0.5, 1, 1.5 s
		synctest.Wait()
		if w.VMName() != "VM-1" {
			t.Fatalf("vm %q after 4 polls, want VM-1", w.VMName())
		}
		if _, ok := w.Pending(); !ok {
			t.Error("the Preempt of vm-1 does not concern VM-1")
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		names, events := m.counts()
		if names != 4 || events != 11 {
			t.Errorf("%d name and %d events requests, want 4 (once known, never again) and 11", names, events)
		}
	})
}

func TestWatcherEventAppearsAndGoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &memIMDS{t: t, vm: "vm-1", doc: doc(1)}
		w, logs, stop := startWatcher(t, m, 0)
		defer stop()
		synctest.Wait()
		appeared := w.Appeared()
		if closed(appeared) {
			t.Fatal("Appeared closed with no event")
		}

		start := time.Now()
		m.set(func(m *memIMDS) { m.doc = doc(2, "Freeze:vm-2", "Preempt:vm-1") })
		select {
		case <-appeared:
		case <-time.After(time.Minute):
			t.Fatal("Appeared not closed a minute after the event appeared")
		}
		synctest.Wait() // the watcher logs the event after closing the channel
		if d := time.Since(start); d > DefaultPollInterval {
			t.Errorf("Appeared closed %v after the event, want within a poll", d)
		}
		e, ok := w.Pending()
		if !ok || e.EventType != TypePreempt || e.EventID != "e2-1" || !closed(w.Appeared()) {
			t.Fatalf("pending %+v, %v", e, ok)
		}
		if want := time.Date(2000, 1, 1, 0, 1, 0, 0, time.UTC); !e.NotBefore.Equal(want) {
			t.Errorf("NotBefore %v, want %v", e.NotBefore, want)
		}
		if n := logs.count("scheduled event concerns this VM"); n != 1 {
			t.Errorf("%d lines naming the event, want 1", n)
		}

		// A failed poll changes nothing: the last answer stands.
		m.set(func(m *memIMDS) { m.status = 500 })
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if _, ok := w.Pending(); !ok {
			t.Error("a failed poll forgot the pending event")
		}

		// The same incarnation again is no news, whatever it says.
		m.set(func(m *memIMDS) { m.status, m.doc = 0, doc(2) })
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if _, ok := w.Pending(); !ok {
			t.Error("an answer with the same incarnation was taken as news")
		}

		m.set(func(m *memIMDS) { m.doc = doc(3, "Preempt:vm-2") })
		time.Sleep(DefaultPollInterval)
		synctest.Wait()
		if e, ok := w.Pending(); ok {
			t.Errorf("pending %+v after the event went", e)
		}
		if n := logs.count("no longer pending"); n != 1 {
			t.Errorf("%d lines about the event going, want 1", n)
		}
		again := w.Appeared()
		if closed(again) {
			t.Fatal("Appeared closed after the event went")
		}
		m.set(func(m *memIMDS) { m.doc = doc(4, "Terminate:vm-1") })
		time.Sleep(DefaultPollInterval)
		synctest.Wait()
		if !closed(again) {
			t.Error("Appeared not closed for a second event")
		}
	})
}

// An unreadable NotBefore is due now, and said once, not on every poll.
func TestWatcherMalformedNotBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &memIMDS{t: t, vm: "vm-1", doc: `{"DocumentIncarnation":5,"Events":[{"EventId":"x",` +
			`"EventType":"Reboot","Resources":["vm-1"],"EventStatus":"Scheduled","NotBefore":"in a while"}]}`}
		w, logs, stop := startWatcher(t, m, 0)
		defer stop()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		e, ok := w.Pending()
		if !ok || !e.NotBeforeMalformed() || !e.StartsBy(time.Now()).Equal(time.Now()) {
			t.Errorf("pending %+v, %v; want the Reboot, due now", e, ok)
		}
		if n := logs.count("unreadable NotBefore"); n != 1 {
			t.Errorf("%d warnings about NotBefore over 6 polls, want 1", n)
		}
	})
}

func TestNewWatcherConfig(t *testing.T) {
	c, err := NewClient(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{-time.Second, time.Millisecond, 199 * time.Millisecond, 2*time.Second + 1} {
		if _, err := NewWatcher(c, WatcherConfig{PollInterval: d}); !errors.Is(err, ErrBadInterval) {
			t.Errorf("interval %v: %v, want ErrBadInterval", d, err)
		}
	}
	for _, d := range []time.Duration{0, MinPollInterval, MaxPollInterval} {
		if _, err := NewWatcher(c, WatcherConfig{PollInterval: d}); err != nil {
			t.Errorf("interval %v: %v", d, err)
		}
	}
	if _, err := NewWatcher(nil, WatcherConfig{}); err == nil {
		t.Error("a nil client was accepted")
	}
}

func TestWatcherRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &memIMDS{t: t, vm: "vm-1", doc: doc(1)}
		w, _, stop := startWatcher(t, m, 0)
		defer stop()
		synctest.Wait() // the first Run is under way
		if err := w.Run(context.Background()); err == nil {
			t.Error("a second Run was accepted")
		}
	})
}
