package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// ErrBadTarget is returned by New for a target that is not an http URL of a
// loopback host with no path, query or credentials.
var ErrBadTarget = errors.New("faultproxy: target must be http://HOST:PORT with a loopback HOST")

// Proxy is a running fault-injecting reverse proxy. Its methods are safe for
// concurrent use.
type Proxy struct {
	target    *url.URL
	listener  net.Listener
	server    *http.Server
	transport *http.Transport
	served    chan struct{} // closed when Serve has returned

	// ctx is cancelled by Close: it ends every wait (latency, black hole) and
	// every forwarded request.
	ctx    context.Context
	cancel context.CancelFunc

	closeOnce sync.Once
	closeErr  error
	handlers  sync.WaitGroup // running handlers; Add only under mu while !closed

	mu     sync.Mutex
	mode   Mode
	wake   chan struct{} // closed and replaced by every Set
	held   int           // requests held in the black hole now
	counts counter
	// lost counts down Mode.LoseAnswer.Count; buckets are Mode.Throttle's
	// (its own lock: taken under mu, never the other way round).
	lost    loseLeft
	buckets *buckets
	closed  bool
}

// New starts a proxy on 127.0.0.1 (a free port) that forwards to target, an
// URL such as "http://127.0.0.1:10000" whose host is a loopback address or
// "localhost". The proxy starts in the zero Mode: everything passes. Close it
// when done.
func New(target string) (*Proxy, error) {
	u, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:   u,
		listener: ln,
		transport: &http.Transport{
			Proxy: nil, // never an HTTP_PROXY from the environment: loopback only
			DialContext: (&net.Dialer{
				Timeout:   5 * time.Second,
				KeepAlive: 30 * time.Second,
			}).DialContext,
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
			// Without this the transport would ask for gzip and unpack the
			// answer, so the client would not get what the target sent.
			DisableCompression: true,
		},
		served: make(chan struct{}),
		ctx:    ctx,
		cancel: cancel,
		wake:   make(chan struct{}),
	}
	p.server = &http.Server{
		Handler:           http.HandlerFunc(p.serve),
		ReadHeaderTimeout: time.Minute,
	}
	go func() {
		defer close(p.served)
		_ = p.server.Serve(ln) // ErrServerClosed after Close
	}()
	return p, nil
}

func parseTarget(target string) (*url.URL, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTarget, err)
	}
	if u.Scheme != "http" || u.Host == "" || u.User != nil || u.Opaque != "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: got %q", ErrBadTarget, target)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return nil, fmt.Errorf("%w: %q is not a loopback host", ErrBadTarget, host)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// URL is the proxy's base URL, "http://127.0.0.1:PORT". Point the client's
// blob endpoint at URL plus the account path (".../devstoreaccount1").
func (p *Proxy) URL() string {
	return "http://" + p.listener.Addr().String()
}

// Set switches the mode at once for every request that arrives from now on.
// Requests already past the mode check keep theirs (one waiting out its
// Latency is still forwarded), except requests held in a black hole: they stay
// held while the new mode has BlackHole set and are answered 503 ServerBusy as
// soon as it does not.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	p.lost = loseLeft{n: m.LoseAnswer.Count, counted: m.LoseAnswer.Count > 0}
	p.buckets = &buckets{t: m.Throttle, m: map[string]*bucket{}}
	close(p.wake)
	p.wake = make(chan struct{})
}

// Mode returns the mode as last given to Set (the zero Mode before any Set).
// Out-of-range values are returned as given; how they are interpreted is
// described on Mode's fields.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Close stops listening, lets go of every request held in a black hole or
// waiting out its latency (their connections are closed without an answer),
// cancels the requests being forwarded, closes every client connection and
// waits for the proxy's handlers to return. Counts stay readable. Close is
// idempotent: later calls return the first call's result.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true // no handler starts (handlers.Add) after this
		p.mu.Unlock()
		p.cancel()
		p.closeErr = p.server.Close()
		<-p.served
		p.handlers.Wait()
		p.transport.CloseIdleConnections()
	})
	return p.closeErr
}

// heldNow is the number of requests held in the black hole (for tests).
func (p *Proxy) heldNow() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}
