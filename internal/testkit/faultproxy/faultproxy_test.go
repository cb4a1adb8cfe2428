package faultproxy

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestNewTarget(t *testing.T) {
	tests := []struct {
		target string
		ok     bool
	}{
		{"http://127.0.0.1:10000", true},
		{"http://127.0.0.1:10000/", true},
		{"http://localhost:10000", true},
		{"http://[::1]:10000", true},
		{"https://127.0.0.1:10000", false},
		{"http://example.com:10000", false},
		{"http://10.0.0.1:10000", false},
		{"http://127.0.0.1:10000/devstoreaccount1", false},
		{"http://127.0.0.1:10000?x=1", false},
		{"http://user:pw@127.0.0.1:10000", false},
		{"127.0.0.1:10000", false},
		{"http://%zz", false},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			p, err := New(tt.target)
			if tt.ok {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				defer p.Close()
				if u := p.URL(); !strings.HasPrefix(u, "http://127.0.0.1:") {
					t.Errorf("URL() = %q, want http://127.0.0.1:PORT", u)
				}
				return
			}
			if !errors.Is(err, ErrBadTarget) {
				t.Fatalf("New: got %v, want ErrBadTarget", err)
			}
		})
	}
}

func TestPassThrough(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, b.srv.URL)
	c := newClient(t, 5*time.Second)

	// The blob name "dir/a%2Fb c" keeps both a real '/' and an escaped one.
	const path = "/devstoreaccount1/leaderrun/cron/a%2Fb%20c"
	signed := http.Header{
		"Authorization":          {"SharedKey devstoreaccount1:c2lnbmF0dXJl+/="},
		"X-Ms-Date":              {"Tue, 01 Sep 2026 09:59:59 GMT"},
		"X-Ms-Version":           {"2026-12-06"},
		"X-Ms-Client-Request-Id": {"11111111-2222-4333-8444-555555555555"},
		"X-Ms-Meta-Holder":       {"host-a:1234"},
		"User-Agent":             {"azsdk-go-azblob/v1.8.3"},
	}
	tests := []struct {
		name        string
		method      string
		query       string
		extra       http.Header
		body        io.Reader
		wantBody    string // what the backend reads
		wantStatus  int
		wantReply   string // what the client reads
		wantLength  string // Content-Length the client sees, if set
		wantTrailer string
	}{
		{name: "get", method: "GET", query: "?comp=metadata&snapshot=2026-01-01T00%3A00%3A00Z",
			wantStatus: 200, wantReply: "reply to GET"},
		{name: "head keeps content-length", method: "HEAD",
			wantStatus: 200, wantLength: "42"},
		{name: "put blob with body", method: "PUT", extra: http.Header{"X-Ms-Blob-Type": {"BlockBlob"}, "If-None-Match": {"*"}},
			body: strings.NewReader("zero-length? not this one"), wantBody: "zero-length? not this one", wantStatus: 201},
		{name: "lease acquire", method: "PUT", query: "?comp=lease",
			extra:      http.Header{"X-Ms-Lease-Action": {"acquire"}, "X-Ms-Lease-Duration": {"15"}, "X-Ms-Proposed-Lease-Id": {"0f8fad5b-d9cb-469f-a165-70867728950e"}},
			wantStatus: 201},
		{name: "delete", method: "DELETE", extra: http.Header{"X-Ms-Lease-Id": {"0f8fad5b-d9cb-469f-a165-70867728950e"}},
			wantStatus: 202, wantReply: "reply to DELETE"},
		{name: "post chunked with trailer", method: "POST", query: "?comp=block&blockid=QUFB",
			body: io.MultiReader(strings.NewReader("chunk one,"), strings.NewReader("chunk two")), wantBody: "chunk one,chunk two",
			wantStatus: 200, wantReply: "reply to POST", wantTrailer: "sum-19"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := signed.Clone()
			for k, vv := range tt.extra {
				header[k] = vv
			}
			resp, reply, err := do(t, c, tt.method, p.URL()+path+tt.query, header, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			got := b.lastSeen()
			if got.method != tt.method {
				t.Errorf("backend got method %q, want %q", got.method, tt.method)
			}
			if want := path + tt.query; got.requestURI != want {
				t.Errorf("backend got request URI %q, want %q", got.requestURI, want)
			}
			for k, vv := range header {
				if g := got.header.Values(k); strings.Join(g, ",") != strings.Join(vv, ",") {
					t.Errorf("backend got %s %q, want %q", k, g, vv)
				}
			}
			if got.body != tt.wantBody {
				t.Errorf("backend got body %q, want %q", got.body, tt.wantBody)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if d := resp.Header.Get("Date"); d != backendDate {
				t.Errorf("Date %q, want the backend's %q", d, backendDate)
			}
			for k, want := range map[string]string{"ETag": `"0x8DCAFE"`, "X-Ms-Request-Id": "backend-request-id", "X-Ms-Lease-State": "leased"} {
				if g := resp.Header.Get(k); g != want {
					t.Errorf("%s %q, want %q", k, g, want)
				}
			}
			if reply != tt.wantReply {
				t.Errorf("reply %q, want %q", reply, tt.wantReply)
			}
			if tt.wantLength != "" {
				if g := resp.Header.Get("Content-Length"); g != tt.wantLength {
					t.Errorf("Content-Length %q, want %q", g, tt.wantLength)
				}
			}
			if g := resp.Trailer.Get("X-Checksum"); g != tt.wantTrailer {
				t.Errorf("trailer X-Checksum %q, want %q", g, tt.wantTrailer)
			}
		})
	}
	if n := p.Counts().Injected; n != 0 {
		t.Errorf("Injected = %d in normal mode, want 0", n)
	}
}

// TestNothingAdded: the proxy adds nothing of its own: no User-Agent or
// Accept-Encoding towards the target (Go's transport would add both), no
// Date towards the client when the target sent none.
func TestNothingAdded(t *testing.T) {
	var got http.Header
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone() // read after the answer: no race
		w.Header()["Date"] = nil
		w.WriteHeader(http.StatusOK)
	})
	p := newProxy(t, b.srv.URL)
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET /devstoreaccount1/c/b HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, k := range []string{"User-Agent", "Accept-Encoding"} {
		if v, ok := got[k]; ok {
			t.Errorf("target got %s %q, want none", k, v)
		}
	}
	if v, ok := resp.Header["Date"]; ok {
		t.Errorf("client got Date %q, the target sent none", v)
	}
}

func TestKeepAlive(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, b.srv.URL)
	c := newClient(t, 5*time.Second)
	for i := range 5 {
		var reused bool
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), "PUT", p.URL()+"/devstoreaccount1/c/b?comp=lease", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-ms-lease-action", "renew")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if i > 0 && !reused {
			t.Errorf("request %d: connection not reused", i)
		}
	}
}

// TestStreaming: the proxy passes on what the target has sent before the
// target has finished.
func TestStreaming(t *testing.T) {
	finish := make(chan struct{})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-finish:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "-second")
	})
	p := newProxy(t, b.srv.URL)
	c := newClient(t, 5*time.Second)
	resp, err := c.Get(p.URL() + "/devstoreaccount1/c/b")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len("first"))
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatalf("reading the first part while the target waits: %v", err)
	}
	close(finish)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(first) + string(rest); got != "first-second" {
		t.Errorf("body %q, want %q", got, "first-second")
	}
}

// TestTargetDown: a target that refuses connections gives 502.
func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := newProxy(t, "http://"+addr)
	resp, _, err := do(t, newClient(t, 5*time.Second), "GET", p.URL()+"/a/b", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502", resp.StatusCode)
	}
}

func TestCounts(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, b.srv.URL)
	c := newClient(t, 5*time.Second)
	blob := p.URL() + "/devstoreaccount1/leaderrun/cron%2Freport"
	tests := []struct {
		name   string
		method string
		url    string
		header http.Header
		op     string
		read   bool
		write  bool
	}{
		{"get properties", "HEAD", blob, nil, OpGetProperties, true, false},
		{"acquire", "PUT", blob + "?comp=lease", http.Header{"X-Ms-Lease-Action": {"acquire"}}, OpAcquire, false, true},
		{"renew", "PUT", blob + "?comp=lease", http.Header{"X-Ms-Lease-Action": {"renew"}}, OpRenew, false, true},
		{"release", "PUT", blob + "?comp=lease", http.Header{"X-Ms-Lease-Action": {"release"}}, OpRelease, false, true},
		{"break", "PUT", blob + "?comp=lease", http.Header{"X-Ms-Lease-Action": {"break"}}, OpBreak, false, true},
		{"change", "PUT", blob + "?comp=lease", http.Header{"X-Ms-Lease-Action": {"change"}}, OpChange, false, true},
		{"lease action upper case", "PUT", blob + "?comp=lease", http.Header{"X-Ms-Lease-Action": {"Renew"}}, OpRenew, false, true},
		{"unknown lease action", "PUT", blob + "?comp=lease", http.Header{"X-Ms-Lease-Action": {"steal"}}, OpOther, false, true},
		{"set metadata", "PUT", blob + "?comp=metadata", http.Header{"X-Ms-Meta-Holder": {"a"}}, OpSetMetadata, false, true},
		{"get metadata", "GET", blob + "?comp=metadata", nil, OpOther, true, false},
		{"create blob", "PUT", blob, http.Header{"X-Ms-Blob-Type": {"BlockBlob"}}, OpCreateBlob, false, true},
		{"copy blob is not create", "PUT", blob, http.Header{"X-Ms-Copy-Source": {"http://127.0.0.1/x"}}, OpOther, false, true},
		{"create container", "PUT", p.URL() + "/devstoreaccount1/leaderrun?restype=container", nil, OpCreateContainer, false, true},
		{"container properties", "HEAD", p.URL() + "/devstoreaccount1/leaderrun?restype=container", nil, OpOther, true, false},
		{"list blobs", "GET", p.URL() + "/devstoreaccount1/leaderrun?restype=container&comp=list&prefix=a", nil, OpList, true, false},
		{"download", "GET", blob, nil, OpOther, true, false},
		{"delete", "DELETE", blob, nil, OpOther, false, true},
		{"options", "OPTIONS", blob, nil, OpOther, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.ResetCounts()
			if _, _, err := do(t, c, tt.method, tt.url, tt.header, nil); err != nil {
				t.Fatal(err)
			}
			want := Counts{ByOp: map[string]int64{tt.op: 1}}
			if tt.read {
				want.Reads = 1
			}
			if tt.write {
				want.Writes = 1
			}
			if got := p.Counts(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Counts() = %+v, want %+v", got, want)
			}
		})
	}
	t.Run("accumulates and resets", func(t *testing.T) {
		p.ResetCounts()
		for range 3 {
			if _, _, err := do(t, c, "PUT", blob+"?comp=lease", http.Header{"X-Ms-Lease-Action": {"renew"}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := do(t, c, "HEAD", blob, nil, nil); err != nil {
			t.Fatal(err)
		}
		got := p.Counts()
		if got.Reads != 1 || got.Writes != 3 || got.ByOp[OpRenew] != 3 || got.ByOp[OpGetProperties] != 1 || got.Injected != 0 {
			t.Errorf("Counts() = %+v", got)
		}
		got.ByOp[OpRenew] = 100 // a copy: the proxy's count must not change
		p.ResetCounts()
		if got := p.Counts(); got.Reads != 0 || got.Writes != 0 || len(got.ByOp) != 0 || got.Injected != 0 {
			t.Errorf("after ResetCounts: %+v", got)
		}
	})
}

// azureError is the XML body of a Blob service error.
type azureError struct {
	Code    string
	Message string
}

func TestErrorRateOne(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, b.srv.URL)
	c := newClient(t, 5*time.Second)
	blob := p.URL() + "/devstoreaccount1/leaderrun/lock"
	tests := []struct {
		name       string
		mode       Mode
		wantStatus int
		wantCode   string
	}{
		{"503", Mode{ErrorRate: 1, ErrorStatus: 503}, 503, "ServerBusy"},
		{"429", Mode{ErrorRate: 1, ErrorStatus: 429}, 429, "ServerBusy"},
		{"500", Mode{ErrorRate: 1, ErrorStatus: 500}, 500, "InternalError"},
		{"status 0 means 503", Mode{ErrorRate: 1}, 503, "ServerBusy"},
		{"status 200 means 503", Mode{ErrorRate: 1, ErrorStatus: 200}, 503, "ServerBusy"},
		{"rate above 1", Mode{ErrorRate: 7, ErrorStatus: 500}, 500, "InternalError"},
		{"code override", Mode{ErrorRate: 1, ErrorStatus: 412, ErrorCode: "LeaseIdMismatchWithBlobOperation"}, 412, "LeaseIdMismatchWithBlobOperation"},
		{"bad code ignored", Mode{ErrorRate: 1, ErrorStatus: 503, ErrorCode: "x</Code>"}, 503, "ServerBusy"},
	}
	requests := []struct {
		method string
		url    string
		header http.Header
	}{
		{"HEAD", blob, nil},
		{"GET", blob, nil},
		{"PUT", blob + "?comp=lease", http.Header{"X-Ms-Lease-Action": {"renew"}, "X-Ms-Client-Request-Id": {"cid-1"}}},
		{"PUT", blob + "?comp=metadata", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.Set(tt.mode)
			p.ResetCounts()
			b.hits.Store(0)
			const rounds = 5
			for range rounds {
				for _, rq := range requests {
					resp, body, err := do(t, c, rq.method, rq.url, rq.header, nil)
					if err != nil {
						t.Fatal(err)
					}
					if resp.StatusCode != tt.wantStatus {
						t.Errorf("%s: status %d, want %d", rq.method, resp.StatusCode, tt.wantStatus)
					}
					if g := resp.Header.Get("x-ms-error-code"); g != tt.wantCode {
						t.Errorf("%s: x-ms-error-code %q, want %q", rq.method, g, tt.wantCode)
					}
					if resp.Header.Get("x-ms-request-id") == "" || resp.Header.Get("Date") == "" {
						t.Errorf("%s: missing x-ms-request-id or Date: %v", rq.method, resp.Header)
					}
					if id := rq.header.Get("X-Ms-Client-Request-Id"); id != "" && resp.Header.Get("x-ms-client-request-id") != id {
						t.Errorf("%s: x-ms-client-request-id not echoed", rq.method)
					}
					if rq.method == "HEAD" {
						continue
					}
					var e azureError
					if err := xml.Unmarshal([]byte(body), &e); err != nil {
						t.Fatalf("%s: body %q: %v", rq.method, body, err)
					}
					if e.Code != tt.wantCode || !strings.Contains(e.Message, "RequestId:") {
						t.Errorf("%s: body %+v", rq.method, e)
					}
				}
			}
			if n := b.hits.Load(); n != 0 {
				t.Errorf("backend reached %d times, want 0", n)
			}
			got := p.Counts()
			if n := int64(rounds * len(requests)); got.Injected != n || got.Reads+got.Writes != n {
				t.Errorf("Counts() = %+v, want %d injected and counted", got, n)
			}
		})
	}
}

func TestErrorRateHalf(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, b.srv.URL)
	c := newClient(t, 5*time.Second)
	p.Set(Mode{ErrorRate: 0.5, ErrorStatus: 503})
	const n = 200
	var refused int64
	for range n {
		resp, _, err := do(t, c, "HEAD", p.URL()+"/devstoreaccount1/c/b", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch resp.StatusCode {
		case 503:
			refused++
		case 200:
		default:
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	// Binomial(200, 0.5): 60..140 is more than 5 standard deviations wide.
	if refused < 60 || refused > 140 {
		t.Errorf("%d of %d refused, want about half", refused, n)
	}
	if got := p.Counts(); got.Injected != refused || b.hits.Load() != n-refused {
		t.Errorf("Counts() = %+v, backend hits %d; refused %d", got, b.hits.Load(), refused)
	}
}

func TestLatency(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, b.srv.URL)
	c := newClient(t, 5*time.Second)
	const d = 150 * time.Millisecond
	tests := []struct {
		name       string
		mode       Mode
		wantStatus int
	}{
		{"forwarded", Mode{Latency: d}, 200},
		{"injected error", Mode{Latency: d, ErrorRate: 1, ErrorStatus: 500}, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.Set(tt.mode)
			start := time.Now()
			resp, _, err := do(t, c, "GET", p.URL()+"/devstoreaccount1/c/b", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el < d {
				t.Errorf("answered after %v, want at least %v", el, d)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
		})
	}
}

func TestBlackHole(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, b.srv.URL)
	blob := p.URL() + "/devstoreaccount1/leaderrun/lock"

	t.Run("client times out, then passes", func(t *testing.T) {
		c := newClient(t, 300*time.Millisecond)
		p.Set(Mode{BlackHole: true})
		_, _, err := do(t, c, "PUT", blob+"?comp=lease", http.Header{"X-Ms-Lease-Action": {"renew"}}, nil)
		var ue *url.Error
		if !errors.As(err, &ue) || !ue.Timeout() {
			t.Fatalf("got %v, want a client timeout", err)
		}
		waitFor(t, "the proxy to notice the client leaving", func() bool { return p.heldNow() == 0 })
		if n := b.hits.Load(); n != 0 {
			t.Fatalf("backend reached %d times in a black hole", n)
		}
		if got := p.Counts(); got.Injected != 1 || got.ByOp[OpRenew] != 1 {
			t.Errorf("Counts() = %+v, want one injected renew", got)
		}
		p.Set(Mode{})
		resp, _, err := do(t, c, "PUT", blob+"?comp=lease", http.Header{"X-Ms-Lease-Action": {"renew"}}, nil)
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("after Set(Mode{}): %v, %v", resp, err)
		}
	})

	t.Run("body read so a leaving client is noticed", func(t *testing.T) {
		c := newClient(t, 300*time.Millisecond)
		p.Set(Mode{BlackHole: true})
		_, _, err := do(t, c, "PUT", blob, http.Header{"X-Ms-Blob-Type": {"BlockBlob"}}, strings.NewReader(strings.Repeat("x", 100<<10)))
		if err == nil {
			t.Fatal("answered in a black hole")
		}
		waitFor(t, "the proxy to notice the client leaving", func() bool { return p.heldNow() == 0 })
		p.Set(Mode{})
	})

	t.Run("held until the mode has no black hole, then 503", func(t *testing.T) {
		c := newClient(t, 5*time.Second)
		p.Set(Mode{BlackHole: true})
		type result struct {
			resp *http.Response
			err  error
		}
		done := make(chan result, 1)
		go func() {
			resp, _, err := do(t, c, "GET", blob, nil, nil)
			done <- result{resp, err}
		}()
		waitFor(t, "the request to be held", func() bool { return p.heldNow() == 1 })
		p.Set(Mode{BlackHole: true, Latency: time.Millisecond})
		select {
		case r := <-done:
			t.Fatalf("answered while still a black hole: %v %v", r.resp, r.err)
		case <-time.After(100 * time.Millisecond):
		}
		p.Set(Mode{})
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.resp.StatusCode != 503 || r.resp.Header.Get("x-ms-error-code") != "ServerBusy" {
			t.Errorf("released request: status %d, code %q; want 503 ServerBusy", r.resp.StatusCode, r.resp.Header.Get("x-ms-error-code"))
		}
		if n := b.hits.Load(); n != 1 { // the one request of the first subtest
			t.Errorf("backend reached %d times, want 1", n)
		}
	})

	t.Run("stalled body released with 503", func(t *testing.T) {
		p.Set(Mode{BlackHole: true})
		conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		// 10 of the 100 bytes announced; the rest never comes.
		if _, err := io.WriteString(conn, "PUT /devstoreaccount1/c/b HTTP/1.1\r\nHost: x\r\nX-Ms-Blob-Type: BlockBlob\r\nContent-Length: 100\r\n\r\n0123456789"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the request to be held", func() bool { return p.heldNow() == 1 })
		p.Set(Mode{})
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 {
			t.Errorf("status %d, want 503", resp.StatusCode)
		}
	})
}

func TestReset(t *testing.T) {
	tests := []struct {
		name   string
		mode   Mode
		warm   bool // make a request first, so the reset hits a kept-alive connection
		method string
		query  string
		header http.Header
	}{
		{"new connection", Mode{Reset: true}, false, "PUT", "?comp=lease", http.Header{"X-Ms-Lease-Action": {"renew"}}},
		{"kept-alive connection", Mode{Reset: true}, true, "PUT", "?comp=lease", http.Header{"X-Ms-Lease-Action": {"renew"}}},
		{"kept-alive read (client retries once)", Mode{Reset: true}, true, "HEAD", "", nil},
		{"reset wins over black hole", Mode{Reset: true, BlackHole: true, ErrorRate: 1}, false, "GET", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t, nil)
			p := newProxy(t, b.srv.URL)
			c := newClient(t, 5*time.Second)
			url := p.URL() + "/devstoreaccount1/leaderrun/lock" + tt.query
			if tt.warm {
				if _, _, err := do(t, c, "GET", url, nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			hits := b.hits.Load()
			p.Set(tt.mode)
			_, _, err := do(t, c, tt.method, url, tt.header, nil)
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("got %v, want ECONNRESET", err)
			}
			if n := b.hits.Load() - hits; n != 0 {
				t.Errorf("backend reached %d times in Reset mode", n)
			}
			if got := p.Counts(); got.Injected < 1 {
				t.Errorf("Counts() = %+v, want the reset counted as injected", got)
			}
			p.Set(Mode{})
			resp, _, err := do(t, c, tt.method, url, tt.header, nil)
			if err != nil {
				t.Fatalf("after Set(Mode{}): %v", err)
			}
			if resp.StatusCode >= 300 {
				t.Errorf("after Set(Mode{}): status %d", resp.StatusCode)
			}
		})
	}
}

func TestClose(t *testing.T) {
	b := newBackend(t, nil)
	p, err := New(b.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, 0) // no client timeout: only Close can end these
	p.Set(Mode{BlackHole: true})
	blob := p.URL() + "/devstoreaccount1/leaderrun/lock"
	requests := []struct {
		method string
		body   string
	}{{"GET", ""}, {"HEAD", ""}, {"PUT", "some body"}}
	errs := make(chan error, len(requests))
	for _, rq := range requests {
		go func() {
			resp, body, err := do(t, c, rq.method, blob, nil, strings.NewReader(rq.body))
			if err == nil {
				err = fmt.Errorf("answered: %d %q", resp.StatusCode, body)
			} else {
				err = nil
			}
			errs <- err
		}()
	}
	waitFor(t, "all requests to be held", func() bool { return p.heldNow() == len(requests) })

	start := time.Now()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range requests {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("a held request was not released by Close")
		}
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("Close released held requests after %v", el)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, _, err := do(t, c, "GET", blob, nil, nil); err == nil {
		t.Error("a request after Close was answered")
	}
	if got := p.Counts(); got.Injected != int64(len(requests)) {
		t.Errorf("Counts() after Close = %+v", got)
	}
}

func TestModeReturnsWhatWasSet(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, b.srv.URL)
	if got := p.Mode(); got != (Mode{}) {
		t.Errorf("initial Mode() = %+v", got)
	}
	m := Mode{Latency: -time.Second, ErrorRate: 2, ErrorStatus: 7, ErrorCode: "x y"}
	p.Set(m)
	if got := p.Mode(); got != m {
		t.Errorf("Mode() = %+v, want %+v", got, m)
	}
}

// Only aims the mode at the requests whose path contains it: the others
// pass as in the zero Mode, a throttle's and a black hole's included.
func TestOnly(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, b.srv.URL)
	c := newClient(t, 500*time.Millisecond)
	base := p.URL() + "/devstoreaccount1/leaderrun/"
	for _, m := range []Mode{
		{Only: "~output/", ErrorRate: 1, ErrorStatus: 500},
		{Only: "~output/", Throttle: Throttle{Rate: 0.001, Burst: 1}},
		{Only: "~output/", BlackHole: true},
	} {
		p.Set(m)
		for range 2 {
			if resp, _, err := do(t, c, "PUT", base+"job", nil, nil); err != nil || resp.StatusCode != http.StatusCreated {
				t.Errorf("%+v: a request it is not aimed at: %v %v", m, resp, err)
			}
		}
		refused := 0
		for range 2 {
			if resp, _, err := do(t, c, "PUT", base+"~output/job~1", nil, nil); err != nil || resp.StatusCode != http.StatusCreated {
				refused++
			}
		}
		if refused == 0 {
			t.Errorf("%+v: the requests it is aimed at passed", m)
		}
	}
	p.Set(Mode{})
}
