package faultproxy

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// serve is the proxy's handler: count, judge by the mode, then reset, hold,
// answer with an injected error or forward.
//
// "Abort" below means panic(http.ErrAbortHandler): net/http then closes the
// connection without writing anything more and without logging.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		panic(http.ErrAbortHandler)
	}
	p.handlers.Add(1)
	m := p.mode.aimedAt(r.URL.Path)
	p.counts.add(r)
	throttled := m.Throttle.Rate > 0 && !p.buckets.take(r.URL.Path, time.Now())
	fail := !throttled && !m.Reset && !m.BlackHole && rand.Float64() < m.errorRate()
	lose := !throttled && !m.Reset && !m.BlackHole && !fail && p.lose(m, r)
	if throttled || m.Reset || m.BlackHole || fail {
		p.counts.injected++
	}
	if throttled {
		p.counts.throttled++
	}
	if lose {
		p.counts.lost++
	}
	p.mu.Unlock()
	defer p.handlers.Done()

	// ctx ends when the client goes away, the handler returns or the proxy
	// is closed.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()

	switch {
	case throttled:
		code := codeForStatus(m.Throttle.status())
		if validCode(m.Throttle.Code) {
			code = m.Throttle.Code
		}
		writeAzureError(w, r, m.Throttle.status(), code)
	case m.Reset:
		resetConn(w)
	case m.BlackHole:
		p.hold(ctx, w, r)
	default:
		if d := m.latency(); d > 0 && !testenv.SleepCtx(ctx, d) {
			panic(http.ErrAbortHandler)
		}
		if fail {
			writeAzureError(w, r, m.errorStatus(), m.errorCode())
			return
		}
		if m.Account.refuse(w, r) {
			return
		}
		w = m.Account.writer(w, r)
		if lose {
			p.forwardAndLose(w, r.WithContext(ctx), m.LoseAnswer)
			return
		}
		p.forward(ctx, w, r)
	}
}

// resetConn takes the connection from net/http and closes it with SO_LINGER
// 0, so the kernel sends RST instead of FIN.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // a plain close is the nearest we can get
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// hold keeps r unanswered while the mode is a black hole. See Mode.BlackHole.
func (p *Proxy) hold(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	// Read the body meanwhile: net/http notices a client leaving (and ends
	// r.Context()) only once the body has been read.
	drained := make(chan struct{})
	if strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		close(drained) // reading would send "100 Continue"
	} else {
		go func() {
			defer close(drained)
			_, _ = io.Copy(io.Discard, r.Body)
		}()
	}
	released := p.awaitNoBlackHole(ctx)
	select {
	case <-drained:
	default:
		// The client is still sending (or stalled): a past read deadline ends
		// the read, so the body is never touched after the handler returns.
		// net/http then closes the connection after the answer.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		<-drained
	}
	if !released {
		panic(http.ErrAbortHandler)
	}
	writeAzureError(w, r, http.StatusServiceUnavailable, codeServerBusy)
}

// awaitNoBlackHole returns true once the mode has no BlackHole, false if ctx
// ends first.
func (p *Proxy) awaitNoBlackHole(ctx context.Context) bool {
	p.mu.Lock()
	p.held++
	defer func() {
		p.mu.Lock()
		p.held--
		p.mu.Unlock()
	}()
	for {
		if !p.mode.BlackHole {
			p.mu.Unlock()
			return true
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		}
		p.mu.Lock()
	}
}

// hopHeaders are meaningful for one connection only and are not forwarded
// (RFC 9110, section 7.6.1).
var hopHeaders = []string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// dropHopHeaders removes hop-by-hop headers, those named by Connection first.
func dropHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// forward sends r to the target and streams the answer back.
func (p *Proxy) forward(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	out := r.Clone(ctx)
	out.RequestURI = "" // set on server requests, refused on client ones
	out.URL.Scheme = p.target.Scheme
	out.URL.Host = p.target.Host
	out.Host = "" // the target's host:port
	out.Close = false
	if r.ContentLength == 0 {
		out.Body = nil // no body: do not make the transport read one
	}
	// The original map, not Clone's copy: net/http fills in the values as
	// the body ends, and the transport sends them after the body.
	out.Trailer = r.Trailer
	dropHopHeaders(out.Header)
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = []string{""} // keep Go's default User-Agent out
	}

	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		if ctx.Err() != nil {
			panic(http.ErrAbortHandler) // the client left or the proxy closed
		}
		http.Error(w, "faultproxy: forwarding to the target: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()

	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = vv
	}
	dropHopHeaders(h)
	if _, ok := resp.Header["Date"]; !ok {
		h["Date"] = nil // the target sent none: net/http must not invent one
	}
	for k := range resp.Trailer {
		h.Add("Trailer", k)
	}
	w.WriteHeader(resp.StatusCode)
	if err := copyBody(w, resp.Body, resp.ContentLength < 0); err != nil {
		// The target or the client failed mid-body: cut the connection so
		// the client cannot take a short body for a whole one.
		panic(http.ErrAbortHandler)
	}
	for k, vv := range resp.Trailer {
		h[http.TrailerPrefix+k] = vv
	}
}

// copyBufs holds the buffers of copyBody.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyBody copies src to w, flushing after every read when flush is set (a
// body of unknown length is streamed as it comes).
func copyBody(w http.ResponseWriter, src io.Reader, flush bool) error {
	rc := http.NewResponseController(w)
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			if flush {
				if err := rc.Flush(); err != nil {
					return err
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
