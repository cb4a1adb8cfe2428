package monitor

// Pinger: the pings a run sends, in order, over https (the metrics textfile
// is in textfile.go; the end ping's body in body.go).

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// Ping timing: each try is cut at PingTryTimeout, and a failed try is
// retried PingRetries times, PingRetryWait apart.
const (
	PingTryTimeout = 10 * time.Second
	PingRetries    = 2
	PingRetryWait  = time.Second
)

// Event is what a ping reports.
type Event string

const (
	EventStart   Event = "start"
	EventSuccess Event = "success"
	EventFail    Event = "fail"
)

// state is ev in Cronitor's telemetry API, for {state}.
func (ev Event) state() string {
	switch ev {
	case EventStart:
		return "run"
	case EventSuccess:
		return "complete"
	}
	return "fail"
}

// Pinger sends one run's pings; make it with NewPinger. Start, then
// Finish, are called from one goroutine; Wait from the same, after both.
//
// The end ping always comes after the start ping's last try: Finish waits
// for the try in flight (at most PingTryTimeout), and once Finish is called
// the start ping is not tried again. Waiting for the start's retries would
// hold the end ping back by up to half a minute, past the bounded wait
// after the release, and the end ping is the one that matters: it says how
// the run ended, and a monitor takes an end without a start.
type Pinger struct {
	base     *url.URL // healthchecks.io's protocol: base, base/start, base/<code>
	template string   // or a template with {event} or {state}, {code} and {rid}
	rid      string
	client   *http.Client
	log      hclog.Logger
	wg       sync.WaitGroup
	warned   atomic.Bool // the one WARNING was logged

	startDone chan struct{} // closed when the start ping's tries are over; nil: none was sent
	finishing chan struct{} // closed by Finish: the start ping is not tried again
	bodyLimit int           // the /start answer's Ping-Body-Limit; 0: none. Written before startDone is closed.
}

// NewPinger checks the ping URL (healthchecks.io's protocol) or template
// (one of the two, not empty) and returns a Pinger for one run, with its
// own run ID. A URL goes over https, or over http to loopback only. An
// error names the flag's problem and at most the URL's host, never its
// path or query.
func NewPinger(pingURL, template string, log hclog.Logger) (*Pinger, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	p := &Pinger{rid: uuid.NewString(), log: log, finishing: make(chan struct{}),
		client: &http.Client{Timeout: PingTryTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	switch {
	case pingURL != "" && template != "":
		return nil, errors.New("give --ping-url or --ping-url-template, not both")
	case pingURL != "":
		u, err := checkURL(pingURL)
		if err != nil {
			return nil, fmt.Errorf("invalid --ping-url: %w", err)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawPath = strings.TrimSuffix(u.RawPath, "/")
		p.base = u
	case template != "":
		if !strings.Contains(template, "{event}") && !strings.Contains(template, "{state}") && !strings.Contains(template, "{code}") {
			return nil, errors.New("invalid --ping-url-template: it names neither {event}, {state} nor {code}, so every ping would say the same")
		}
		var host string
		for _, ev := range []Event{EventStart, EventSuccess, EventFail} {
			u, err := checkURL(expand(template, ev, 1, "rid"))
			if err != nil {
				return nil, fmt.Errorf("invalid --ping-url-template: %w", err)
			}
			if host != "" && u.Scheme+"://"+u.Host != host {
				return nil, errors.New("invalid --ping-url-template: the scheme and host must not depend on the event")
			}
			host = u.Scheme + "://" + u.Host
		}
		p.template = template
	default:
		return nil, errors.New("no ping URL")
	}
	return p, nil
}

// checkURL parses a ping URL: https, or http to loopback. Its errors never
// hold the path or the query, which are the check's secret.
func checkURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("want an https:// URL")
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("plain http:// to %s is refused: the URL is a secret, use https (http is allowed to loopback only)", u.Hostname())
	}
	return u, nil
}

func isLoopback(host string) bool {
	return strings.EqualFold(host, "localhost") || net.ParseIP(host).IsLoopback() // nil (no IP) is not loopback
}

// SetLogger sets where the pings' WARNING and debug lines go.
func (p *Pinger) SetLogger(log hclog.Logger) { p.log = log }

// RunID is the run's ID (rid), as the pings carry it.
func (p *Pinger) RunID() string { return p.rid }

// Start pings that COMMAND has started; it does not wait. A template that
// names neither {event} nor {state} gets no start ping: its {code} alone
// would read 0, which a monitor takes for success.
func (p *Pinger) Start() {
	if p.template != "" && !strings.Contains(p.template, "{event}") && !strings.Contains(p.template, "{state}") {
		p.log.Debug("no start ping: the template names neither {event} nor {state}")
		return
	}
	target := p.target(EventStart, 0)
	done := make(chan struct{})
	p.startDone = done
	p.wg.Go(func() {
		defer close(done)
		var err error
		for try := 0; try <= PingRetries; try++ {
			if try > 0 {
				select {
				case <-p.finishing:
				case <-time.After(PingRetryWait):
				}
				select {
				case <-p.finishing: // also when both were ready
					p.log.Debug("the start ping is not tried again: the run has ended", "to", where(target), "error", err)
					return
				default:
				}
			}
			var resp http.Header
			if resp, err = p.post(target, nil); err == nil {
				p.bodyLimit, _ = strconv.Atoi(resp.Get("Ping-Body-Limit")) // absent or bad: 0, no limit
				p.log.Debug("pinged", "event", EventStart, "to", where(target))
				return
			}
		}
		p.failed(EventStart, target, err)
	})
}

// Finish pings how COMMAND ended: success for 0, else fail with the code
// leaderrun exits with. The body is the summary line (holder, term,
// duration, exit), then the end of output, COMMAND's last output: at most
// the Ping-Body-Limit the monitor gave in its answer to the start ping,
// whose front is left out when the whole does not fit. It does not wait;
// output is copied. A run has one end: a second call does nothing.
func (p *Pinger) Finish(code int, summary string, output []byte) {
	select {
	case <-p.finishing:
		return
	default:
		close(p.finishing)
	}
	ev := EventSuccess
	if code != 0 {
		ev = EventFail
	}
	target := p.target(ev, code)
	output = bytes.Clone(output)
	started := p.startDone
	p.wg.Go(func() {
		limit := 0
		if started != nil {
			<-started // the start ping's try in flight ends first
			limit = p.bodyLimit
		}
		body := endBody(summary, output, limit)
		var err error
		for try := 0; try <= PingRetries; try++ {
			if try > 0 {
				time.Sleep(PingRetryWait)
			}
			if _, err = p.post(target, body); err == nil {
				p.log.Debug("pinged", "event", ev, "to", where(target), "body_bytes", len(body))
				return
			}
		}
		p.failed(ev, target, err)
	})
}

// failed logs a ping that gave up: one WARNING a run, since the monitor
// that missed the start misses the end too, and says so itself.
func (p *Pinger) failed(ev Event, target string, err error) {
	if !p.warned.Swap(true) {
		p.log.Warn("could not ping the monitor; leaderrun's exit status is unchanged", "event", ev, "to", where(target), "error", err)
	} else {
		p.log.Debug("could not ping the monitor", "event", ev, "to", where(target), "error", err)
	}
}

// Wait waits for the pings in flight, at most d, and reports whether they
// were all done. Call it after the release, never before.
func (p *Pinger) Wait(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// target is the URL a ping for ev goes to.
func (p *Pinger) target(ev Event, code int) string {
	if p.template != "" {
		return expand(p.template, ev, code, p.rid)
	}
	u := *p.base
	switch ev {
	case EventStart:
		u.Path += "/start"
	case EventFail:
		u.Path += "/" + strconv.Itoa(code)
	}
	u.RawPath = "" // the suffix needs no escaping: from Path again
	q := u.Query()
	q.Set("rid", p.rid)
	u.RawQuery = q.Encode()
	return u.String()
}

func expand(template string, ev Event, code int, rid string) string {
	return strings.NewReplacer("{event}", string(ev), "{state}", ev.state(), "{code}", strconv.Itoa(code), "{rid}", url.QueryEscape(rid)).Replace(template)
}

// where names the ping's destination for a log line: scheme and host only,
// since the path and the query are the check's secret.
func where(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return "the ping URL"
	}
	return u.Scheme + "://" + u.Host
}

// post sends one try, cut at PingTryTimeout, and returns the answer's
// header. A redirect is never followed: it counts as a failed try.
func (p *Pinger) post(target string, body []byte) (http.Header, error) {
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("bad request")
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := p.client.Do(req)
	if err != nil {
		// The error names the URL, path and query included: say only
		// what kind of failure it was.
		var ue *url.Error
		if errors.As(err, &ue) && ue.Timeout() {
			return nil, fmt.Errorf("no answer within %s", PingTryTimeout)
		}
		return nil, errors.New("not reachable")
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("answered %s", resp.Status)
	}
	return resp.Header, nil
}
