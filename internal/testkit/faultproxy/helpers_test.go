package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// backendDate is the Date the fake service answers with, so a test can tell
// it from a Date net/http would make up.
const backendDate = "Tue, 01 Sep 2026 10:00:00 GMT"

// seen is one request as the fake service received it.
type seen struct {
	method     string
	requestURI string
	header     http.Header
	body       string
	trailer    http.Header
}

// backend stands in for Azurite: it records each request and answers with a
// fixed Date, a few x-ms-* headers and a body naming the method.
type backend struct {
	srv  *httptest.Server
	hits atomic.Int64

	mu   sync.Mutex
	last seen

	// handle, if set, answers instead of the default.
	handle http.HandlerFunc
}

func newBackend(t *testing.T, handle http.HandlerFunc) *backend {
	t.Helper()
	b := &backend{handle: handle}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve)) // 127.0.0.1
	t.Cleanup(b.srv.Close)
	return b
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	b.hits.Add(1)
	if b.handle != nil {
		b.handle(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.last = seen{
		method:     r.Method,
		requestURI: r.RequestURI,
		header:     r.Header.Clone(),
		body:       string(body),
		trailer:    r.Trailer.Clone(),
	}
	b.mu.Unlock()

	reply := "reply to " + r.Method
	h := w.Header()
	h.Set("Date", backendDate)
	h.Set("ETag", `"0x8DCAFE"`)
	h.Set("x-ms-request-id", "backend-request-id")
	h.Set("x-ms-lease-state", "leased")
	switch r.Method {
	case http.MethodHead:
		h.Set("Content-Length", "42") // the blob's length; no body
		w.WriteHeader(http.StatusOK)
	case http.MethodPut:
		w.WriteHeader(http.StatusCreated)
	case http.MethodDelete:
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, reply)
	case http.MethodPost:
		h.Set("Trailer", "X-Checksum")
		_, _ = io.WriteString(w, reply)
		w.(http.Flusher).Flush() // chunked: unknown length
		h.Set("X-Checksum", "sum-"+strconv.Itoa(len(body)))
	default:
		_, _ = io.WriteString(w, reply)
	}
}

func (b *backend) lastSeen() seen {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// newProxy starts a proxy in front of target, closed when the test ends.
func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatalf("New(%q): %v", target, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// newClient is an HTTP client with its own connection pool.
func newClient(t *testing.T, timeout time.Duration) *http.Client {
	t.Helper()
	tr := &http.Transport{Proxy: nil, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: timeout}
}

// do sends a request and returns the answer with its body read.
func do(t *testing.T, c *http.Client, method, url string, header http.Header, body io.Reader) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, vv := range header {
		req.Header[k] = vv
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// waitFor polls cond until it holds, failing the test after 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
