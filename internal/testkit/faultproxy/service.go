package faultproxy

// service.go: the storage service's hard answers that the emulator never
// gives: a write applied whose answer is lost (LoseAnswer), and throttling
// per blob beyond a request rate (Throttle).

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// LoseAnswer forwards matching requests to the target, so that what they
// ask for is done, and then loses the answer, as the service does when it
// answers 500 or times out after applying a write, or as a connection reset
// mid-answer does. The zero LoseAnswer loses nothing.
type LoseAnswer struct {
	// Op is the operation whose answers are lost (an Op* constant, as
	// Counts names them); "" matches none.
	Op string
	// Path, if not empty, must be contained in the request's path (a blob
	// name, for example "~pause").
	Path string
	// Query, if not empty, must be contained in the request's raw query
	// ("startFrom=" for the pages of a listing sent on from a name).
	Query string
	// Count is how many matching requests lose their answer after the
	// mode is set; later ones pass. 0 or less: every matching request.
	Count int
	// Status is what the client gets instead of the target's answer: 0
	// drops the connection without an answer (a client timeout or reset);
	// 500 or any 4xx/5xx answers that status with an Azure error (Code,
	// or the status's default: 500 InternalError).
	Status int
	// Code, if valid (letters and digits), replaces the error code chosen
	// from Status, for example "OperationTimedOut" with 500.
	Code string
}

func (l LoseAnswer) matches(r *http.Request) bool {
	return l.Op != "" && operation(r) == l.Op && strings.Contains(r.URL.Path, l.Path) && strings.Contains(r.URL.RawQuery, l.Query)
}

// Throttle answers requests to one blob beyond a rate the way the service
// answers past its per-blob target: 503 ServerBusy (or Status/Code, for
// example 500 OperationTimedOut), never forwarded. Each blob path (a
// container's own requests count under the container's path) has a token
// bucket of Burst tokens refilled at Rate per second; a request takes one
// token or is refused. The zero Throttle refuses nothing.
type Throttle struct {
	Rate   float64 // requests per second per blob; 0 or less: no limit
	Burst  int     // the bucket's size; 0 or less: one second's worth (at least 1)
	Status int     // 0: 503
	Code   string  // "": the status's default (503 ServerBusy)
}

func (t Throttle) burst() float64 {
	if t.Burst > 0 {
		return float64(t.Burst)
	}
	return max(t.Rate, 1)
}

func (t Throttle) status() int {
	if t.Status < 400 || t.Status > 599 {
		return http.StatusServiceUnavailable
	}
	return t.Status
}

// buckets holds the per-blob token buckets of a Throttle; it is replaced by
// every Set.
type buckets struct {
	mu sync.Mutex
	t  Throttle
	m  map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// take reports whether a request to path may pass now.
func (b *buckets) take(path string, now time.Time) bool {
	if b == nil || b.t.Rate <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := b.m[path]
	if !ok {
		k = &bucket{tokens: b.t.burst(), at: now}
		b.m[path] = k
	}
	k.tokens = min(b.t.burst(), k.tokens+now.Sub(k.at).Seconds()*b.t.Rate)
	k.at = now
	if k.tokens < 1 {
		return false
	}
	k.tokens--
	return true
}

// loseLeft counts down LoseAnswer.Count; guarded by Proxy.mu.
type loseLeft struct {
	n       int
	counted bool // Count > 0
}

// lose decides, under Proxy.mu, whether r's answer is to be lost.
func (p *Proxy) lose(m Mode, r *http.Request) bool {
	if !m.LoseAnswer.matches(r) {
		return false
	}
	if !p.lost.counted {
		return true
	}
	if p.lost.n <= 0 {
		return false
	}
	p.lost.n--
	return true
}

// forwardAndLose forwards r, reads and discards the target's answer, then
// answers as l says.
func (p *Proxy) forwardAndLose(w http.ResponseWriter, r *http.Request, l LoseAnswer) {
	rec := &discard{h: http.Header{}}
	p.forward(r.Context(), rec, r)
	if l.Status == 0 {
		panic(http.ErrAbortHandler) // the answer never comes
	}
	status := l.Status
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	code := codeForStatus(status)
	if validCode(l.Code) {
		code = l.Code
	}
	writeAzureError(w, r, status, code)
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}
