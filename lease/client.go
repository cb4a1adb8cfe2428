// Client: one lease blob, its credentials and SDK clients, and the requests
// that the Elector and the Lease make on it, each classified by mapError.

package lease

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/hashicorp/go-hclog"
)

// Request bounds. Every request carries a context deadline; these are the
// longest ones, shortened by the caller's deadline (and, on the renew path,
// by the time left on the lease).
const (
	requestTimeout = 5 * time.Second // one request outside the renew path
	tryTimeout     = 10 * time.Second
	dialTimeout    = 5 * time.Second
	tlsTimeout     = 5 * time.Second
	headerTimeout  = 10 * time.Second
)

// The Azurite emulator's well-known account (public, documented by Microsoft).
const (
	devAccount  = "devstoreaccount1"
	devKey      = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	devEndpoint = "http://127.0.0.1:10000/" + devAccount
)

// ClientConfig says where the lease blob is and how to authenticate. The
// secrets (ConnectionString, AccountKey, SASToken) come from the environment
// and never appear in a log line or an error.
type ClientConfig struct {
	Container, Blob string // the blob name may contain '/'
	// Account is the storage account name; Endpoint the blob service URL,
	// by default https://<account>.blob.core.windows.net. Endpoint
	// overrides a connection string's BlobEndpoint.
	Account, Endpoint string
	// Credentials, used in this order: ConnectionString; Account +
	// AccountKey; SASToken (with Account or Endpoint); otherwise Microsoft
	// Entra ID through azidentity.DefaultAzureCredential.
	ConnectionString, AccountKey, SASToken string
	Logger                                 hclog.Logger
}

// Client is one lease blob: its properties, and the requests an Elector and
// a Lease make on it. It is safe for concurrent use.
type Client struct {
	url       string // the blob URL, never with a query string
	container string
	blobName  string
	auth      authMode
	secrets   []string // redacted from every error message

	api blobAPI
	log hclog.Logger

	// What Sibling needs to address another blob of the container with
	// the same credentials and transport, and List to list the container.
	containerURL string
	azAuth       azAuth
	opts         azcore.ClientOptions
	lister       containerAPI

	// marker is the client of the lease's pause marker (names.go), which
	// its slots share; nil for a container client, a marker's client, and
	// the fakes of unit tests that do not test the pause.
	marker *Client
}

// NewClient checks cfg and builds the Azure SDK's clients. It makes no
// request. A configuration that cannot work is a *ConfigError.
//
// The SDK's own retries are off (leaderrun retries with its own deadlines),
// every try is bounded, and the HTTP transport bounds dialing, the TLS
// handshake and the wait for response headers, and speaks HTTP/1.1 only, so
// that a request cut by its deadline takes its connection with it (a stuck
// HTTP/2 connection would hang every later renewal until the lease is lost).
func NewClient(cfg ClientConfig) (*Client, error) {
	if err := validateBlobName(cfg.Blob); err != nil {
		return nil, err
	}
	if strings.Contains(cfg.Blob, MarkerSep) {
		return nil, configErr("lease name", "%q: %q is reserved for the blobs leaderrun keeps beside a lease (slots, markers)", cfg.Blob, MarkerSep)
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	if c.marker, err = c.Sibling(PauseBlob(cfg.Blob)); err != nil {
		return nil, err
	}
	return c, nil
}

// NewContainerClient is NewClient for the container as a whole, with no
// lease name (cfg.Blob must be empty): its List lists the container, its
// Sibling addresses any blob of it; it has no blob requests of its own. It
// makes no request.
func NewContainerClient(cfg ClientConfig) (*Client, error) {
	if cfg.Blob != "" {
		return nil, configErr("lease name", "%q: a container client has none", cfg.Blob)
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	c.api = nil
	return c, nil
}

// newClient is NewClient without the checks of the lease name; with an
// empty cfg.Blob, URL is the container's.
func newClient(cfg ClientConfig) (*Client, error) {
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if err := validateContainer(cfg.Container); err != nil {
		return nil, err
	}

	c := &Client{container: cfg.Container, blobName: cfg.Blob, log: log.Named("lease")}
	src, err := pickCredentials(cfg)
	if err != nil {
		return nil, err
	}
	c.auth, c.secrets = src.auth, src.secrets
	account, endpoint := src.account, src.endpoint
	if endpoint == "" {
		if account == "" {
			return nil, configErr("storage account", "no account and no endpoint: set AZURE_STORAGE_ACCOUNT (--account) or LEADERRUN_ENDPOINT (--endpoint)")
		}
		if err := validateAccount(account); err != nil {
			return nil, err
		}
		endpoint = "https://" + account + ".blob.core.windows.net"
	}
	base, loopback, err := checkEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	containerURL := base + "/" + cfg.Container
	c.url = containerURL
	if cfg.Blob != "" {
		c.url += "/" + escapeBlobName(cfg.Blob)
	}

	opts := clientOptions(loopback)
	auth, err := c.sdkAuth(src, opts)
	if err != nil {
		return nil, err
	}
	api, err := newAzBlob(c.url, containerURL, auth, opts)
	if err != nil {
		return nil, configErr("endpoint", "%s", c.sanitize(err))
	}
	c.api, c.lister = api, api
	c.containerURL, c.azAuth, c.opts = containerURL, auth, opts
	c.log.Debug("storage client", "url", c.url, "auth", c.auth.String())
	return c, nil
}

// URL is the blob's URL, without any query string, SAS or credential.
func (c *Client) URL() string { return c.url }

// BlobURL is the URL of another blob of the container, without any query
// string, SAS or credential.
func (c *Client) BlobURL(blob string) string { return c.containerURL + "/" + escapeBlobName(blob) }

// Name is the blob name (the lease name).
func (c *Client) Name() string { return c.blobName }

// Container is the container name.
func (c *Client) Container() string { return c.container }

// State is a blob lease's state as the service reports it, or StateAbsent
// for a blob (or container) that does not exist.
type State string

const (
	StateAvailable State = "available"
	StateLeased    State = "leased"
	StateExpired   State = "expired"
	StateBreaking  State = "breaking"
	StateBroken    State = "broken"
	StateAbsent    State = "absent"
)

// Held reports whether an acquire would fail now: leased or breaking.
func (s State) Held() bool { return s == StateLeased || s == StateBreaking }

// Properties is what the blob says about its lease.
type Properties struct {
	Exists   bool
	State    State
	Metadata map[string]string // keys lowercased; never nil
	Date     time.Time         // the service's Date response header; zero if absent
	Created  time.Time         // when the blob was made (x-ms-creation-time); zero if unknown

	// A scheduled lease's schedule and the occurrence last started
	// (--schedule); "" and zero if none.
	Schedule   string
	Occurrence time.Time

	// Parsed from the metadata; zero if absent or malformed.
	Holder        string
	Term          int64
	LeaseDuration time.Duration
	AcquiredAt    time.Time

	LastRun *Run // the run of the lastrun* keys; nil if none was recorded

	// Directory: the blob is a directory of a hierarchical-namespace
	// account (account.go), not a lease.
	Directory bool

	etag string // the blob's ETag when read; "" if absent
}

// Properties reads the blob's properties and metadata (one read request).
// A missing blob or container is not an error: Exists is false and State
// is StateAbsent. Failures are *StorageError; a done ctx returns ctx.Err().
func (c *Client) Properties(ctx context.Context) (*Properties, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	p, err := c.getProperties(rctx)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return p, err
}

// getProperties is Properties with the caller's deadline only.
func (c *Client) getProperties(ctx context.Context) (*Properties, error) {
	resp, err := c.api.getProperties(ctx)
	if err != nil {
		se := c.mapError("get properties", err)
		if se.kind == kindBlobMissing || se.kind == kindContainerMissing {
			return &Properties{State: StateAbsent, Metadata: map[string]string{}, Date: errorDate(err)}, nil
		}
		return nil, se
	}
	state := StateAvailable
	if resp.LeaseState != "" {
		state = State(resp.LeaseState)
	}
	p := newProperties(state, resp.Metadata, resp.Date)
	p.etag = resp.ETag
	p.Created = resp.Created
	return p, nil
}

// errorDate is the Date header of a refusal; zero if it has none.
func errorDate(err error) time.Time {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse == nil {
		return time.Time{}
	}
	t, perr := http.ParseTime(re.RawResponse.Header.Get("Date"))
	if perr != nil {
		return time.Time{}
	}
	return t.UTC()
}

// BreakAtPeriodEnd, as Break's period, sends no break period: the service
// then frees the lease when the holder's current lease period ends. That is
// the bound the holder's stop deadline is built on, so the holder notices
// (its next renewal is refused) and stops its child before anyone else can
// acquire — whatever duration the metadata records, even between a new
// holder's acquire and its claim.
const BreakAtPeriodEnd time.Duration = -1

// BreakLease breaks the blob's lease, whoever holds it (no lease ID needed). With
// BreakAtPeriodEnd the lease is free when the holder's current period ends
// (the safe break). With a period (0–60 s, whole seconds) the service frees
// it after the shorter of that period and what is left of the holder's:
// shorter than the holder's lease, the old holder's child may still run
// while a new holder starts; with period 0 the lease is broken at once. No
// lease to break is an error wrapping ErrNotLeased.
// It returns how long until the lease is broken, as the service reports it.
func (c *Client) BreakLease(ctx context.Context, period time.Duration) (time.Duration, error) {
	if period != BreakAtPeriodEnd && (period < 0 || period > MaxDuration || period%time.Second != 0) {
		return 0, configErr("break period", "%s: want whole seconds from 0s to 60s", period)
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	seconds := -1 // no period
	if period != BreakAtPeriodEnd {
		seconds = int(period / time.Second)
	}
	resp, err := c.api.breakLease(rctx, seconds)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		se := c.mapError("break", err)
		if se.kind == kindNotLeased || se.kind == kindBlobMissing || se.kind == kindContainerMissing {
			return 0, fmt.Errorf("%w: nothing to break at %s", ErrNotLeased, c.url)
		}
		return 0, se
	}
	var left time.Duration
	if resp.LeaseTime > 0 {
		left = time.Duration(resp.LeaseTime) * time.Second
	}
	c.log.Debug("lease broken", "url", c.url, "period", period, "broken_in", left)
	return left, nil
}

// acquire sends Acquire Lease for leaseID; the answer has the service's
// Date and the blob's ETag.
func (c *Client) acquire(ctx context.Context, leaseID string, d time.Duration) (answer, error) {
	resp, err := c.api.acquireLease(ctx, leaseID, int(d/time.Second))
	if err != nil {
		return answer{}, c.mapError("acquire", err)
	}
	return resp, nil
}

// renew sends Renew Lease; it returns the service's Date.
func (c *Client) renew(ctx context.Context, leaseID string) (time.Time, error) {
	resp, err := c.api.renewLease(ctx, leaseID)
	if err != nil {
		return time.Time{}, c.mapError("renew", err)
	}
	return resp.Date, nil
}

// release sends Release Lease.
func (c *Client) release(ctx context.Context, leaseID string) error {
	if _, err := c.api.releaseLease(ctx, leaseID); err != nil {
		return c.mapError("release", err)
	}
	return nil
}

// setMetadata replaces the blob's metadata, with the lease ID as access
// condition (only the holder can write) and, if ifMatch is not empty, the
// condition that the blob's ETag is still ifMatch; it returns the service's
// Date.
func (c *Client) setMetadata(ctx context.Context, leaseID, ifMatch string, md map[string]string) (time.Time, error) {
	resp, err := c.api.setMetadata(ctx, leaseID, ifMatch, md)
	if err != nil {
		return time.Time{}, c.mapError("set metadata", err)
	}
	return resp.Date, nil
}

// ensureBlob creates the container (when missing) and the zero-length lock
// blob with If-None-Match: *, so that an existing blob is never overwritten.
// Someone else creating either first is fine.
func (c *Client) ensureBlob(ctx context.Context, containerMissing bool) error {
	if containerMissing {
		if _, err := c.api.createContainer(ctx); err != nil {
			if se := c.mapError("create container", err); se.kind != kindExists {
				return se
			}
		} else {
			c.log.Info("created container", "container", c.container)
		}
	}
	if _, err := c.api.createBlob(ctx); err != nil {
		se := c.mapError("create blob", err)
		switch {
		case se.kind == kindExists, se.StatusCode == http.StatusPreconditionFailed:
			return nil // it exists (possibly leased by whoever created it)
		case se.kind == kindContainerMissing && !containerMissing:
			return c.ensureBlob(ctx, true)
		}
		return se
	}
	c.log.Info("created lease blob", "url", c.url)
	return nil
}
