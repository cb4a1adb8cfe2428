package blobsim

// transport.go: how requests reach the Service: a Transport per client,
// which the Azure SDK calls in place of its HTTP client (no network, no
// goroutine: everything happens on the caller's goroutine, so it runs in a
// testing/synctest bubble), and an http.Handler for a loopback server.
// Both draw each request's faults and apply them around the answer.

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Transport is the transport of one client: put it in the SDK's
// azcore.ClientOptions.Transport. client names the client in Request and
// Applied. Each call of Do returns when the request's fate is decided,
// leaving no goroutine behind; its waits (Plan's delays, a lost answer)
// are timers and the request's context, so a bubble's fake clock runs
// them.
func (s *Service) Transport(client string) policy.Transporter {
	return &transport{s: s, client: client}
}

type transport struct {
	s      *Service
	client string
}

// Do answers req as the service would, through req's faults. Failures
// without an answer are *url.Error, as net/http returns them: the
// context's error, a connection refused or reset (syscall.ECONNREFUSED,
// syscall.ECONNRESET inside).
func (t *transport) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, urlError(req, err)
	}
	c := parse(req)
	seq, plan := t.s.plan(t.client, c)
	a, err := t.s.serve(ctx, c, t.client, seq, plan)
	if err != nil {
		return nil, urlError(req, err)
	}
	return a.response(req), nil
}

// Handler serves the Service over HTTP for client: for a loopback
// server (httptest). A request unreachable, reset or lost without an
// answer has its connection closed without one.
func (s *Service) Handler(client string) http.Handler { return handler{s: s, client: client} }

// ServeHTTP is Handler("").
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	handler{s: s}.ServeHTTP(w, r)
}

type handler struct {
	s      *Service
	client string
}

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := parse(r)
	seq, plan := h.s.plan(h.client, c)
	a, err := h.s.serve(r.Context(), c, h.client, seq, plan)
	if err != nil {
		panic(http.ErrAbortHandler) // the connection closes without an answer
	}
	a.write(w)
}

// plan counts the request and draws its faults.
func (s *Service) plan(client string, c *call) (int, Plan) {
	s.faultsMu.Lock()
	defer s.faultsMu.Unlock()
	k := seqKey{client, c.op, c.container, c.blob}
	seq := s.seqs[k]
	s.seqs[k] = seq + 1
	if s.faults == nil {
		return seq, Plan{}
	}
	return seq, s.faults.Plan(Request{Client: client, Op: c.op, Container: c.container, Blob: c.blob, Seq: seq})
}

// Network failures, as net/http's client reports them inside a *url.Error.
var (
	errRefused = &net.OpError{Op: "dial", Net: "tcp", Addr: loopbackAddr, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	errReset   = &net.OpError{Op: "read", Net: "tcp", Addr: loopbackAddr, Err: os.NewSyscallError("read", syscall.ECONNRESET)}

	loopbackAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10000}
)

// serve carries c through plan p: the answer, or the error the client
// gets instead (the context's, errRefused, errReset).
func (s *Service) serve(ctx context.Context, c *call, client string, seq int, p Plan) (*answer, error) {
	if err := sleep(ctx, p.Delay); err != nil {
		return nil, err
	}
	var a *answer
	switch {
	case p.Unreachable:
		return nil, errRefused
	case p.Refuse != 0:
		a = s.faultAnswer(c, p.Refuse, p.RefuseCode)
	default:
		a = s.apply(c, client, seq)
		if p.Lose {
			switch {
			case p.LoseAs == 0:
				<-ctx.Done()
				return nil, ctx.Err()
			case p.LoseAs < 0:
				a = nil
			default:
				a = s.faultAnswer(c, p.LoseAs, p.RefuseCode)
			}
		}
	}
	if err := sleep(ctx, p.AnswerDelay); err != nil {
		return nil, err
	}
	if a == nil {
		return nil, errReset
	}
	return a, nil
}

// faultAnswer is an error answer the service did not decide: throttling,
// an internal error, a timeout.
func (s *Service) faultAnswer(c *call, status int, code string) *answer {
	if code == "" {
		code = usualCode(status)
	}
	return s.refusal(c, &failure{status: status, code: code}, time.Now())
}

// sleep waits d, or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// urlError wraps err as net/http's client does.
func urlError(req *http.Request, err error) error {
	op := req.Method
	if len(op) > 1 {
		op = op[:1] + strings.ToLower(op[1:])
	}
	return &url.Error{Op: op, URL: req.URL.String(), Err: err}
}
