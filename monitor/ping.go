package monitor

// Pinger: the pings a run sends (the metrics textfile is in textfile.go).

import (
	"errors"
	"fmt"
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

// Pinger sends one run's pings; make it with NewPinger.
type Pinger struct {
	base     *url.URL // healthchecks.io's protocol: base, base/start, base/<code>
	template string   // or a template with {event}, {code} and {rid}
	rid      string
	client   *http.Client
	log      hclog.Logger
	wg       sync.WaitGroup
	warned   atomic.Bool // the one WARNING was logged
}

// NewPinger checks the ping URL (healthchecks.io's protocol) or template
// (one of the two, not empty) and returns a Pinger for one run, with its
// own run ID. An error names the flag's problem, never the URL's path.
func NewPinger(pingURL, template string, log hclog.Logger) (*Pinger, error) {
	p := &Pinger{rid: uuid.NewString(), log: log,
		client: &http.Client{Timeout: PingTryTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	switch {
	case pingURL != "" && template != "":
		return nil, fmt.Errorf("give --ping-url or --ping-url-template, not both")
	case pingURL != "":
		u, err := checkURL(pingURL)
		if err != nil {
			return nil, fmt.Errorf("invalid --ping-url: %w", err)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		p.base = u
	case template != "":
		if !strings.Contains(template, "{event}") && !strings.Contains(template, "{code}") {
			return nil, fmt.Errorf("invalid --ping-url-template: it names neither {event} nor {code}, so every ping would say the same")
		}
		if _, err := checkURL(expand(template, EventStart, 0, "rid")); err != nil {
			return nil, fmt.Errorf("invalid --ping-url-template: %w", err)
		}
		p.template = template
	default:
		return nil, fmt.Errorf("no ping URL")
	}
	return p, nil
}

func checkURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("want an http:// or https:// URL")
	}
	return u, nil
}

// SetLogger sets where the pings' WARNING and debug lines go.
func (p *Pinger) SetLogger(log hclog.Logger) { p.log = log }

// RunID is the run's ID (rid), as the pings carry it.
func (p *Pinger) RunID() string { return p.rid }

// Start pings that COMMAND has started; it does not wait.
func (p *Pinger) Start() { p.send(EventStart, 0, "") }

// Finish pings how COMMAND ended: success for 0, else fail with the code
// leaderrun exits with; summary is the body. It does not wait.
func (p *Pinger) Finish(code int, summary string) {
	ev := EventSuccess
	if code != 0 {
		ev = EventFail
	}
	p.send(ev, code, summary)
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
	q := u.Query()
	q.Set("rid", p.rid)
	u.RawQuery = q.Encode()
	return u.String()
}

func expand(template string, ev Event, code int, rid string) string {
	return strings.NewReplacer("{event}", string(ev), "{code}", strconv.Itoa(code), "{rid}", url.QueryEscape(rid)).Replace(template)
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

func (p *Pinger) send(ev Event, code int, body string) {
	target := p.target(ev, code)
	p.wg.Go(func() {
		var err error
		for try := 0; try <= PingRetries; try++ {
			if try > 0 {
				time.Sleep(PingRetryWait)
			}
			if err = p.post(target, body); err == nil {
				p.log.Debug("pinged", "event", ev, "to", where(target))
				return
			}
		}
		// One WARNING a run: the monitor that missed the start misses the
		// end too, and says so itself.
		if !p.warned.Swap(true) {
			p.log.Warn("could not ping the monitor; leaderrun's exit status is unchanged", "event", ev, "to", where(target), "error", err)
		} else {
			p.log.Debug("could not ping the monitor", "event", ev, "to", where(target), "error", err)
		}
	})
}

func (p *Pinger) post(target, body string) error {
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(body)) // the client cuts it at PingTryTimeout
	if err != nil {
		return fmt.Errorf("bad request")
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := p.client.Do(req)
	if err != nil {
		// The error names the URL, path and query included: say only
		// what kind of failure it was.
		var ue *url.Error
		if errors.As(err, &ue) && ue.Timeout() {
			return fmt.Errorf("no answer within %s", PingTryTimeout)
		}
		return fmt.Errorf("not reachable")
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}
