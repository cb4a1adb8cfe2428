package fakeimds

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Event is one scheduled event as the fake serves it.
type Event struct {
	ID        string // EventId; AddEvent makes one up when empty
	Type      string // Preempt, Freeze, Reboot, Redeploy, Terminate, …
	Resources []string
	Status    string // "" means Scheduled
	// NotBefore is sent in RFC 1123 GMT; the zero time sends "". NotBeforeText,
	// when set, is sent instead, as given (for malformed values).
	NotBefore     time.Time
	NotBeforeText string
	Description   string
	Source        string // "" means Platform
	Duration      int    // DurationInSeconds; 0 sends -1 (unknown)
}

// Counts are the requests the server has seen.
type Counts struct {
	Names    int // GET of the VM name, answered or not
	Events   int // GET of the scheduled events, answered or not
	Posts    int // POST requests, to any path (all refused)
	NoHeader int // requests refused for lacking "Metadata: true"
	Other    int // any other method or path
}

// Server is a running fake metadata service. Its methods are safe for
// concurrent use.
type Server struct {
	listener net.Listener
	server   *http.Server
	served   chan struct{}
	ctx      context.Context // cancelled by Close: ends every SetDelay wait
	cancel   context.CancelFunc

	mu          sync.Mutex
	vm          string
	incarnation int
	events      []Event
	raw         *string
	failure     int
	delay       time.Duration
	nextID      int
	counts      Counts
}

// New starts a server for the VM named vm on 127.0.0.1, on a free port.
func New(vm string) (*Server, error) { return Listen("127.0.0.1:0", vm) }

// Listen starts a server for the VM named vm on addr, which must be a
// loopback address ("127.0.0.1:0" picks a free port).
func Listen(addr, vm string) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("fakeimds: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("fakeimds: %q is not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakeimds: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{listener: ln, served: make(chan struct{}), ctx: ctx, cancel: cancel, vm: vm, incarnation: 1}
	s.server = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: time.Minute}
	go func() {
		defer close(s.served)
		_ = s.server.Serve(ln) // ErrServerClosed after Close
	}()
	return s, nil
}

// URL is the server's base URL, "http://127.0.0.1:PORT": the value for
// LEADERRUN_IMDS_ENDPOINT.
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() }

// Close stops the server, ending requests in progress. It is idempotent.
func (s *Server) Close() error {
	s.cancel()
	err := s.server.Close()
	<-s.served
	return err
}

// SetVMName changes the name the server gives.
func (s *Server) SetVMName(vm string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vm = vm
}

// SetEvents replaces the events (none after SetEvents()) and ends SetRaw.
func (s *Server) SetEvents(events ...Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append([]Event(nil), events...)
	s.changed()
}

// AddEvent adds an event and returns its ID (made up when e.ID is empty).
func (s *Server) AddEvent(e Event) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.ID == "" {
		s.nextID++
		e.ID = fmt.Sprintf("00000000-0000-0000-0000-%012d", s.nextID)
	}
	s.events = append(s.events, e)
	s.changed()
	return e.ID
}

// AddPreempt adds a Spot eviction of vm, Scheduled, not before notBefore,
// and returns its ID.
func (s *Server) AddPreempt(vm string, notBefore time.Time) string {
	return s.AddEvent(Event{Type: "Preempt", Resources: []string{vm}, NotBefore: notBefore,
		Description: "Virtual machine is being preempted.", Duration: 0})
}

// Clear removes every event.
func (s *Server) Clear() { s.SetEvents() }

// changed records a change of the document; s.mu is held.
func (s *Server) changed() {
	s.incarnation++
	s.raw = nil
}

// Incarnation is the DocumentIncarnation the server sends now.
func (s *Server) Incarnation() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.incarnation
}

// SetRaw makes the events request answer 200 with body as given (bad JSON,
// odd fields) until the next SetEvents, AddEvent or Clear.
func (s *Server) SetRaw(body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw = &body
}

// SetFailure makes every request with the header answer status (500, 503,
// …); 0 restores normal answers.
func (s *Server) SetFailure(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failure = status
}

// SetDelay holds every request for d before answering (a slow service, or
// the first request after boot); 0 answers at once. A request held when
// the client gives up or the server is closed ends without an answer.
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Counts returns the requests seen so far.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Posted reports whether any POST has been received.
func (s *Server) Posted() bool { return s.Counts().Posts > 0 }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	kind := s.classify(r)
	delay, failure := s.delay, s.failure
	s.mu.Unlock()
	switch kind {
	case "post":
		w.Header().Set("Allow", "GET")
		http.Error(w, "POST is refused: leaderrun must never approve an event", http.StatusMethodNotAllowed)
		return
	case "noheader":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Bad request. Required metadata header not specified"})
		return
	case "other":
		http.NotFound(w, r)
		return
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
	if failure != 0 {
		http.Error(w, "failure injected by fakeimds", failure)
		return
	}
	s.mu.Lock()
	vm, body := s.vm, s.document()
	s.mu.Unlock()
	if kind == "name" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(vm))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(body)
}

// classify counts r and says what it is: "post", "noheader", "name",
// "events" or "other". s.mu is held.
func (s *Server) classify(r *http.Request) string {
	switch {
	case r.Method == http.MethodPost:
		s.counts.Posts++
		return "post"
	case r.Header.Get("Metadata") != "true":
		s.counts.NoHeader++
		return "noheader"
	case r.Method != http.MethodGet:
		s.counts.Other++
		return "other"
	case r.URL.Path == "/metadata/instance/compute/name" && r.URL.Query().Get("format") == "text":
		s.counts.Names++
		return "name"
	case r.URL.Path == "/metadata/scheduledevents" && r.URL.Query().Get("api-version") != "":
		s.counts.Events++
		return "events"
	}
	s.counts.Other++
	return "other"
}

// document renders the events document; s.mu is held.
func (s *Server) document() []byte {
	if s.raw != nil {
		return []byte(*s.raw)
	}
	type wireEvent struct {
		EventId           string
		EventType         string
		ResourceType      string
		Resources         []string
		EventStatus       string
		NotBefore         string
		Description       string
		EventSource       string
		DurationInSeconds int
	}
	doc := struct {
		DocumentIncarnation int
		Events              []wireEvent
	}{DocumentIncarnation: s.incarnation, Events: []wireEvent{}}
	for _, e := range s.events {
		we := wireEvent{EventId: e.ID, EventType: e.Type, ResourceType: "VirtualMachine",
			Resources: e.Resources, EventStatus: e.Status, NotBefore: e.NotBeforeText,
			Description: e.Description, EventSource: e.Source, DurationInSeconds: e.Duration}
		if we.Resources == nil {
			we.Resources = []string{}
		}
		if we.EventStatus == "" {
			we.EventStatus = "Scheduled"
		}
		if we.NotBefore == "" && !e.NotBefore.IsZero() {
			we.NotBefore = e.NotBefore.UTC().Format(http.TimeFormat)
		}
		if we.EventSource == "" {
			we.EventSource = "Platform"
		}
		if we.DurationInSeconds == 0 {
			we.DurationInSeconds = -1
		}
		doc.Events = append(doc.Events, we)
	}
	b, _ := json.Marshal(doc) // cannot fail: strings and ints only
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
