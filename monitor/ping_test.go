package monitor

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// recorder is a monitor that records the pings it gets.
type recorder struct {
	mu    sync.Mutex
	pings []string // path?query, then the body after a space if any
}

func (r *recorder) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	line := req.URL.RequestURI()
	if len(body) > 0 {
		line += " " + strings.TrimSpace(string(body))
	}
	r.pings = append(r.pings, line)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.pings...)
}

func testLogger(buf *bytes.Buffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Trace})
}

func TestPingsHealthchecksProtocol(t *testing.T) {
	for _, tc := range []struct {
		code int
		want string // the final ping's path
	}{{0, "/ping/SECRET-UUID"}, {3, "/ping/SECRET-UUID/3"}, {76, "/ping/SECRET-UUID/76"}} {
		rec := &recorder{}
		srv := httptest.NewServer(http.HandlerFunc(rec.serve))
		var logs bytes.Buffer
		p, err := NewPinger(srv.URL+"/ping/SECRET-UUID/", "", testLogger(&logs))
		if err != nil {
			t.Fatal(err)
		}
		p.Start()
		if !p.Wait(5 * time.Second) {
			t.Fatal("the start ping did not end")
		}
		p.Finish(tc.code, "holder=vm-1 exit=3", nil)
		if !p.Wait(5 * time.Second) {
			t.Fatal("the final ping did not end")
		}
		srv.Close()
		got := rec.got()
		rid := "?rid=" + p.RunID()
		if len(got) != 2 || got[0] != "/ping/SECRET-UUID/start"+rid || !strings.HasPrefix(got[1], tc.want+rid+" holder=vm-1") {
			t.Errorf("exit %d: pings %q, want start then %s, one rid", tc.code, got, tc.want)
		}
		if strings.Contains(logs.String(), "SECRET") {
			t.Errorf("the log names the ping URL's path: %s", logs.String())
		}
	}
}

func TestPingTemplate(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(rec.serve))
	defer srv.Close()
	p, err := NewPinger("", srv.URL+"/p/KEY?state={event}&status_code={code}&series={rid}", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	p.Finish(77, "", nil)
	p.Wait(5 * time.Second)
	got := strings.Join(rec.got(), "\n")
	for _, want := range []string{"state=start&status_code=0&series=" + p.RunID(), "state=fail&status_code=77&series=" + p.RunID()} {
		if !strings.Contains(got, want) {
			t.Errorf("pings %q lack %q", got, want)
		}
	}
}

// A monitor that cannot be reached: one WARNING for the run, naming the
// host only; the pings end within their retries.
func TestPingMonitorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var logs bytes.Buffer
	p, err := NewPinger("http://"+addr+"/ping/SECRET-UUID?key=QUERYSECRET", "", testLogger(&logs))
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	p.Finish(0, "", nil)
	if !p.Wait(3*PingRetryWait + 5*time.Second) {
		t.Fatal("the pings did not give up")
	}
	if n := strings.Count(logs.String(), "[WARN]"); n != 1 {
		t.Errorf("%d WARNING lines, want 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "SECRET") || !strings.Contains(logs.String(), "http://"+addr) {
		t.Errorf("the log must name the host, never the path or the query:\n%s", logs.String())
	}
}

func TestPingerRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct{ url, template string }{
		{"", ""},
		{"ftp://x/y", ""},
		{"not a url", ""},
		{"https://hc-ping.com/x", "https://x/{event}"},
		{"", "https://x/fixed"},
	} {
		if _, err := NewPinger(tc.url, tc.template, hclog.NewNullLogger()); err == nil {
			t.Errorf("NewPinger(%q, %q): no error", tc.url, tc.template)
		}
	}
}

// A start ping answered 503 is retried a second later; a run that ends in
// that second must not see the retry land after its end ping, or the
// monitor shows a job started and never finished.
func TestPingEndComesAfterTheStart(t *testing.T) {
	var mu sync.Mutex
	var got []string
	firstStart := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path)
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/start") {
			once.Do(func() {
				w.WriteHeader(http.StatusServiceUnavailable)
				close(firstStart)
			})
		}
	}))
	defer srv.Close()
	p, err := NewPinger(srv.URL+"/ping/x", "", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	<-firstStart // answered 503: the start ping waits to try again
	p.Finish(0, "holder=vm-1", nil)
	if !p.Wait(3*PingTryTimeout + 5*time.Second) {
		t.Fatal("the pings did not end")
	}
	// The server may still be handling a request the client gave up on:
	// closing it waits for that.
	srv.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[len(got)-1] != "/ping/x" {
		t.Fatalf("pings %q: the end ping must be the last", got)
	}
	// Once the run has ended, the start ping is not tried again: its
	// retries would hold the end ping back.
	if strings.Join(got, " ") != "/ping/x/start /ping/x" {
		t.Errorf("pings %q, want the start answered 503, then the end", got)
	}
}

// A template that names only {code} would expand it to 0 at the start,
// which healthchecks.io takes for success: no start ping then, and the end
// ping still goes.
func TestPingTemplateWithoutEventSendsNoStart(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(rec.serve))
	defer srv.Close()
	for _, tc := range []struct {
		code int
		want string
	}{{0, "/ping/KEY/0"}, {3, "/ping/KEY/3"}} {
		p, err := NewPinger("", srv.URL+"/ping/KEY/{code}", hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		p.Start()
		p.Finish(tc.code, "", nil)
		if !p.Wait(5 * time.Second) {
			t.Fatal("the pings did not end")
		}
		if got := rec.got(); len(got) != 1 || got[0] != tc.want {
			t.Errorf("exit %d: pings %q, want %s alone", tc.code, got, tc.want)
		}
		rec.mu.Lock()
		rec.pings = nil
		rec.mu.Unlock()
	}
}

// {state} speaks Cronitor's telemetry API: run, complete, fail.
func TestPingTemplateState(t *testing.T) {
	for _, tc := range []struct {
		code int
		end  string
	}{{0, "complete"}, {76, "fail"}} {
		rec := &recorder{}
		srv := httptest.NewServer(http.HandlerFunc(rec.serve))
		p, err := NewPinger("", srv.URL+"/p/KEY/report?state={state}&series={rid}", hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		p.Start()
		p.Finish(tc.code, "", nil)
		p.Wait(5 * time.Second)
		srv.Close()
		want := []string{"/p/KEY/report?state=run&series=" + p.RunID(), "/p/KEY/report?state=" + tc.end + "&series=" + p.RunID()}
		if got := rec.got(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("exit %d: pings %q, want %q", tc.code, got, want)
		}
	}
}

// A ping URL is a secret: plain http only to loopback, and the refusal
// names the host at most, never the path or the query.
func TestPingRefusesPlainHTTP(t *testing.T) {
	for _, tc := range []struct {
		url, template string
		ok            bool
	}{
		{"http://hc-ping.example/SECRET-UUID?k=QUERYSECRET", "", false},
		{"", "http://cronitor.example/p/SECRET/x?state={state}", false},
		{"http://10.0.0.1/SECRET", "", false},
		{"", "https://{event}.example/SECRET", false}, // the host would change with the event
		{"https://hc-ping.example/SECRET-UUID", "", true},
		{"http://127.0.0.1:8000/ping/x", "", true},
		{"http://localhost/ping/x", "", true},
		{"http://[::1]:8000/ping/x", "", true},
		{"", "http://127.0.0.1/p/x?state={state}", true},
	} {
		_, err := NewPinger(tc.url, tc.template, hclog.NewNullLogger())
		if (err == nil) != tc.ok {
			t.Errorf("NewPinger(%q, %q): error %v, want ok=%v", tc.url, tc.template, err, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the refusal names the path or the query: %v", err)
		}
	}
}

// No redirect is followed: a 307 counts as a failed ping, and the address
// it names gets nothing (the URL's secret would go with the request).
func TestPingNeverFollowsARedirect(t *testing.T) {
	other := &recorder{}
	elsewhere := httptest.NewServer(http.HandlerFunc(other.serve))
	defer elsewhere.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	var logs bytes.Buffer
	p, err := NewPinger(srv.URL+"/ping/SECRET-UUID", "", testLogger(&logs))
	if err != nil {
		t.Fatal(err)
	}
	p.Finish(0, "", nil)
	if !p.Wait(3*PingRetryWait + 5*time.Second) {
		t.Fatal("the ping did not give up")
	}
	if got := other.got(); len(got) != 0 {
		t.Errorf("the redirect was followed: %q", got)
	}
	if !strings.Contains(logs.String(), "307") || strings.Count(logs.String(), "[WARN]") != 1 {
		t.Errorf("want one WARNING naming the 307:\n%s", logs.String())
	}
}

// The end ping's body: the summary line on top, then COMMAND's output, its
// front left out to keep within the Ping-Body-Limit of the /start answer.
func TestPingBodyKeepsWithinTheMonitorsLimit(t *testing.T) {
	const limit = 300
	var mu sync.Mutex
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/start") {
			w.Header().Set("Ping-Body-Limit", strconv.Itoa(limit))
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		body = b
		mu.Unlock()
	}))
	defer srv.Close()
	p, err := NewPinger(srv.URL+"/ping/x", "", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	var output []byte
	for i := range 100 {
		output = fmt.Appendf(output, "line %03d\n", i)
	}
	p.Start()
	p.Finish(1, "holder=vm-1 term=3 duration=1s exit=1", output)
	output[len(output)-2] = 'X' // Finish keeps its own copy
	if !p.Wait(5 * time.Second) {
		t.Fatal("the pings did not end")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(body) > limit || !bytes.HasPrefix(body, []byte("holder=vm-1 term=3 duration=1s exit=1\n")) || !bytes.HasSuffix(body, []byte("line 098\nline 099\n")) {
		t.Errorf("body of %d bytes, want at most %d, the summary on top and the output's end:\n%s", len(body), limit, body)
	}
}

func TestEndBody(t *testing.T) {
	long := []byte(strings.Repeat("a", 200) + "the end\n")
	for _, tc := range []struct {
		name    string
		summary string
		output  []byte
		limit   int
		want    string
	}{
		{"no limit", "sum", long, 0, "sum\n" + string(long)},
		{"fits", "sum\n", long, 212, "sum\n" + string(long)},
		{"cut at the front", "sum", long, 4 + 39 + 8, "sum\n[200 earlier bytes of output left out]\nthe end\n"},
		{"cut inside a character: after it", "s", []byte(strings.Repeat("a", 100) + "ö1234"), 2 + 39 + 5, "s\n[102 earlier bytes of output left out]\n1234"},
		{"only the summary fits", "summary line", long, 8, "summary "},
		{"no output", "sum", nil, 10, "sum\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(endBody(tc.summary, tc.output, tc.limit))
			if got != tc.want {
				t.Errorf("endBody = %q, want %q", got, tc.want)
			}
			if tc.limit > 0 && len(got) > tc.limit {
				t.Errorf("%d bytes, over the limit %d", len(got), tc.limit)
			}
		})
	}
}
