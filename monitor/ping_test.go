package monitor

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
		p.Finish(tc.code, "holder=vm-1 exit=3")
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
	p.Finish(77, "")
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
	p.Finish(0, "")
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
