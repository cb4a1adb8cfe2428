package imds

// The client: the two GET requests, their header, timeout and transport.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// DefaultEndpoint is the Instance Metadata Service's address on every Azure VM.
const DefaultEndpoint = "http://169.254.169.254"

// DefaultTimeout bounds each request unless Config.Timeout says otherwise.
const DefaultTimeout = 2 * time.Second

// The paths and API versions leaderrun uses.
const (
	vmNamePath = "/metadata/instance/compute/name?api-version=2021-02-01&format=text"
	eventsPath = "/metadata/scheduledevents?api-version=2020-07-01"
)

// maxBody bounds what is read of an answer; a real document is a few kB.
const maxBody = 1 << 20

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrBadEndpoint: the endpoint is not an http(s) URL with a host and
	// without credentials, query or fragment.
	ErrBadEndpoint = errors.New("imds: bad endpoint")
	// ErrBadAnswer: the service answered 200 with something unreadable (bad
	// JSON, no DocumentIncarnation, an empty VM name).
	ErrBadAnswer = errors.New("imds: unreadable answer")
	// ErrStatus: the service answered with a status other than 200. See
	// *StatusError.
	ErrStatus = errors.New("imds: error status")
)

// StatusError is an answer with a status other than 200.
type StatusError struct {
	Path string // the request's path, without the query
	Code int
	Body string // the start of the body, for logs
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("imds: GET %s: status %d", e.Path, e.Code)
	}
	return fmt.Sprintf("imds: GET %s: status %d: %s", e.Path, e.Code, e.Body)
}

// Unwrap makes errors.Is(err, ErrStatus) true.
func (e *StatusError) Unwrap() error { return ErrStatus }

// Config configures a Client.
type Config struct {
	// Endpoint is the service's base URL; "" means DefaultEndpoint. Tests
	// and proxies set it (LEADERRUN_IMDS_ENDPOINT); no credential is ever
	// sent there.
	Endpoint string
	// Timeout bounds each request, from dialing to the end of the body;
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// Logger receives debug lines; nil logs nothing. It is Named("imds").
	Logger hclog.Logger
}

// Client makes the metadata service's GET requests. It is safe for
// concurrent use.
type Client struct {
	base    string // scheme://host[:port][/prefix], without a trailing slash
	timeout time.Duration
	hc      *http.Client
	log     hclog.Logger
}

// NewClient checks cfg and builds the client; it makes no request.
//
// The transport never uses a proxy (HTTP_PROXY and the like are ignored:
// the service answers only on the VM's own link), bounds dialing and the
// wait for response headers, keeps one idle connection, and does not follow
// redirects.
func NewClient(cfg Config) (*Client, error) {
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	base, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	if timeout < 0 {
		return nil, fmt.Errorf("imds: negative timeout %s", timeout)
	}
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	transport := &http.Transport{
		Proxy:                 nil, // never through a proxy, whatever the environment says
		DialContext:           (&net.Dialer{Timeout: timeout}).DialContext,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          1,
		MaxIdleConnsPerHost:   1,
		IdleConnTimeout:       30 * time.Second,
		DisableCompression:    true,
	}
	hc := &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a 3xx is an error status, not a hop
		},
	}
	return &Client{base: base, timeout: timeout, hc: hc, log: log.Named("imds")}, nil
}

func parseEndpoint(s string) (string, error) {
	if s == "" {
		s = DefaultEndpoint
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadEndpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Opaque != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("%w: want http://HOST[:PORT], got %q", ErrBadEndpoint, s)
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// Endpoint is the base URL requests go to.
func (c *Client) Endpoint() string { return c.base }

// VMName asks for this VM's name (compute/name). Leading and trailing space
// is trimmed; an empty name is ErrBadAnswer.
func (c *Client) VMName(ctx context.Context) (string, error) {
	body, err := c.get(ctx, vmNamePath)
	if err != nil {
		return "", err
	}
	name := strings.TrimSpace(string(body))
	if name == "" {
		return "", fmt.Errorf("%w: empty VM name", ErrBadAnswer)
	}
	return name, nil
}

// Events asks for the scheduled-events document. An event whose NotBefore
// cannot be read is kept, with a zero NotBefore (see Event.NotBefore).
func (c *Client) Events(ctx context.Context) (Document, error) {
	body, err := c.get(ctx, eventsPath)
	if err != nil {
		return Document{}, err
	}
	return parseDocument(body)
}

// get makes one GET of path (with its query) under the client's timeout and
// returns the body of a 200 answer.
func (c *Client) get(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("imds: %w", err)
	}
	req.Header.Set("Metadata", "true")
	short, _, _ := strings.Cut(path, "?")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("imds: GET %s: %w", short, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("imds: GET %s: reading the answer: %w", short, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Path: short, Code: resp.StatusCode, Body: snippet(body)}
	}
	c.log.Trace("answer", "path", short, "bytes", len(body))
	return body, nil
}

// snippet is the start of an error body, on one line.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
