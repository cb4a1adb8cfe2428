package imds

// The client against the fake metadata service, over real loopback HTTP.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/fakeimds"
)

func newFake(t *testing.T, vm string) *fakeimds.Server {
	t.Helper()
	s, err := fakeimds.New(vm)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newClient(t *testing.T, endpoint string, timeout time.Duration) *Client {
	t.Helper()
	c, err := NewClient(Config{Endpoint: endpoint, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientAgainstFake(t *testing.T) {
	s := newFake(t, "vm-1")
	nb := time.Now().Add(30 * time.Second).Truncate(time.Second)
	id := s.AddPreempt("vm-1", nb)
	c := newClient(t, s.URL()+"/", 0)

	name, err := c.VMName(context.Background())
	if err != nil || name != "vm-1" {
		t.Fatalf("VMName = %q, %v", name, err)
	}
	d, err := c.Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.DocumentIncarnation != s.Incarnation() || len(d.Events) != 1 {
		t.Fatalf("Events = %+v, want one event at incarnation %d", d, s.Incarnation())
	}
	e := d.Events[0]
	if e.EventID != id || e.EventType != TypePreempt || e.EventStatus != StatusScheduled ||
		!e.NotBefore.Equal(nb) || !e.Concerns("VM-1") {
		t.Errorf("event = %+v, want a Preempt of vm-1 not before %v", e, nb)
	}
	got := s.Counts()
	if got != (fakeimds.Counts{Names: 1, Events: 1}) {
		t.Errorf("fake saw %+v, want one name and one events request, all with the header", got)
	}
}

func TestFakeRefusesWithoutHeaderAndPost(t *testing.T) {
	s := newFake(t, "vm-1")
	for _, tc := range []struct {
		method, header string
		want           int
	}{
		{http.MethodGet, "", http.StatusBadRequest},
		{http.MethodGet, "false", http.StatusBadRequest},
		{http.MethodPost, "true", http.StatusMethodNotAllowed},
		{http.MethodGet, "true", http.StatusOK},
	} {
		req, _ := http.NewRequest(tc.method, s.URL()+eventsPath, strings.NewReader(""))
		if tc.header != "" {
			req.Header.Set("Metadata", tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s with Metadata %q: status %d, want %d", tc.method, tc.header, resp.StatusCode, tc.want)
		}
	}
	if c := s.Counts(); c.NoHeader != 2 || c.Posts != 1 || !s.Posted() {
		t.Errorf("counts %+v, want 2 without header and 1 POST", c)
	}
}

func TestClientErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*fakeimds.Server)
		call  func(*Client) error
		want  error
	}{
		{"events 500", func(s *fakeimds.Server) { s.SetFailure(500) }, events, ErrStatus},
		{"name 503", func(s *fakeimds.Server) { s.SetFailure(503) }, vmName, ErrStatus},
		{"bad JSON", func(s *fakeimds.Server) { s.SetRaw(`{"DocumentIncarnation": 1, "Events": [`) }, events, ErrBadAnswer},
		{"no incarnation", func(s *fakeimds.Server) { s.SetRaw(`{"Events": []}`) }, events, ErrBadAnswer},
		{"empty name", func(s *fakeimds.Server) { s.SetVMName(" \n") }, vmName, ErrBadAnswer},
		{"timeout", func(s *fakeimds.Server) { s.SetDelay(time.Minute) }, events, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFake(t, "vm-1")
			tc.setup(s)
			c := newClient(t, s.URL(), 300*time.Millisecond)
			start := time.Now()
			err := tc.call(c)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			// Generous: the timeout is 300 ms; a client without one would wait a minute.
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v", d)
			}
			var se *StatusError
			if errors.As(err, &se) && (se.Code < 500 || !strings.Contains(se.Body, "fakeimds")) {
				t.Errorf("status error %+v", se)
			}
			if s.Posted() {
				t.Error("the client POSTed")
			}
		})
	}
}

func events(c *Client) error { _, err := c.Events(context.Background()); return err }
func vmName(c *Client) error { _, err := c.VMName(context.Background()); return err }

func TestClientUnreachable(t *testing.T) {
	s := newFake(t, "vm-1")
	url := s.URL()
	_ = s.Close()
	if err := events(newClient(t, url, time.Second)); err == nil {
		t.Fatal("no error from a closed service")
	}
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL+eventsPath, http.StatusFound))
	defer redirect.Close()
	err := events(newClient(t, redirect.URL, time.Second))
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusFound {
		t.Errorf("got %v, want a StatusError 302", err)
	}
	if hits.Load() != 0 {
		t.Error("the redirect was followed")
	}
}

func TestNewClientEndpoint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", DefaultEndpoint},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080"},
		{"https://proxy.example/imds/", "https://proxy.example/imds"},
		{"ftp://x", ""},
		{"http://user:pw@127.0.0.1", ""},
		{"http://127.0.0.1/?x=1", ""},
		{"http://127.0.0.1/#f", ""},
		{"127.0.0.1:80", ""},
		{"http://", ""},
	} {
		c, err := NewClient(Config{Endpoint: tc.in})
		switch {
		case tc.want == "" && !errors.Is(err, ErrBadEndpoint):
			t.Errorf("NewClient(%q) = %v, want ErrBadEndpoint", tc.in, err)
		case tc.want != "" && (err != nil || c.Endpoint() != tc.want):
			t.Errorf("NewClient(%q): endpoint %v, %v; want %q", tc.in, c, err, tc.want)
		}
	}
	if _, err := NewClient(Config{Timeout: -time.Second}); err == nil {
		t.Error("a negative timeout was accepted")
	}
}

// The proxy test runs in a child test process, because net/http reads the
// proxy variables once per process.
const noProxyChildEnv = "LEADERRUN_TEST_IMDS_NOPROXY_CHILD"

// TestNoProxy: with HTTP_PROXY pointing at a recording proxy, a request of
// the plain client goes through it (so the variable is in effect), and the
// imds client's requests do not.
func TestNoProxy(t *testing.T) {
	if os.Getenv(noProxyChildEnv) != "" {
		noProxyChild(t)
		return
	}
	var paths atomic.Value
	paths.Store("")
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths.Store(paths.Load().(string) + r.URL.Path + ";")
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(`vm-from-proxy`))
	}))
	defer proxy.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoProxy$", "-test.count=1")
	cmd.Env = append(os.Environ(), noProxyChildEnv+"=1", "HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL,
		"NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if got := paths.Load().(string); got != "/control;" {
		t.Errorf("the proxy saw %q, want only the plain client's /control", got)
	}
}

func noProxyChild(t *testing.T) {
	resp, err := http.Get("http://imds.invalid/control")
	if err != nil {
		t.Fatalf("control request through the proxy: %v", err)
	}
	resp.Body.Close()
	c := newClient(t, "http://imds.invalid", 500*time.Millisecond)
	if name, err := c.VMName(context.Background()); err == nil {
		t.Errorf("VMName = %q through the proxy, want an error (no such host)", name)
	}
	if err := events(c); err == nil {
		t.Error("Events answered through the proxy, want an error (no such host)")
	}
}

// BenchmarkClientEvents is the cost of one poll's request against the fake
// service on loopback (one event in the document).
func BenchmarkClientEvents(b *testing.B) {
	s, err := fakeimds.New("vm-1")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.AddPreempt("vm-1", time.Now().Add(time.Minute))
	c, err := NewClient(Config{Endpoint: s.URL()})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := c.Events(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
