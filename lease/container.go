package lease

import (
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

// ClientConfig says where the container (and the lease blob) is and how to
// authenticate. The secrets (ConnectionString, AccountKey, SASToken) come
// from the environment and never appear in a log line or an error.
type ClientConfig struct {
	// Blob is the lease name, for NewLeaseBlob; "" for NewContainer. It
	// may contain '/'.
	Container, Blob string
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

// Container is a container of leases: the credentials and transport its
// blobs share, its listing, and the classification of what the service
// answers (classify.go). It is safe for concurrent use.
type Container struct {
	name    string
	url     string // never with a query string
	auth    authMode
	secrets []string // redacted from every error message
	cred    azAuth
	opts    azcore.ClientOptions
	api     containerAPI
	log     hclog.Logger
}

// NewContainer checks cfg, whose Blob must be empty, and builds the Azure
// SDK's client of the container (clientOptions). It makes no request. A
// configuration that cannot work is a *ConfigError.
func NewContainer(cfg ClientConfig) (*Container, error) {
	if cfg.Blob != "" {
		return nil, configErr("lease name", "%q: a container client has none", cfg.Blob)
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if err := validateContainer(cfg.Container); err != nil {
		return nil, err
	}
	src, err := pickCredentials(cfg)
	if err != nil {
		return nil, err
	}
	c := &Container{name: cfg.Container, auth: src.auth, secrets: src.secrets, log: log.Named("lease")}
	endpoint := src.endpoint
	if endpoint == "" {
		if src.account == "" {
			return nil, configErr("storage account", "no account and no endpoint: set AZURE_STORAGE_ACCOUNT (--account) or LEADERRUN_ENDPOINT (--endpoint)")
		}
		if err := validateAccount(src.account); err != nil {
			return nil, err
		}
		endpoint = "https://" + src.account + ".blob.core.windows.net"
	}
	base, loopback, err := checkEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	c.url = base + "/" + cfg.Container
	c.opts = clientOptions(loopback)
	if c.cred, err = c.sdkAuth(src, c.opts); err != nil {
		return nil, err
	}
	cc, err := newSDKContainer(c)
	if err != nil {
		return nil, configErr("endpoint", "%s", c.sanitize(err))
	}
	c.api = &azContainer{c: c, container: cc}
	c.log.Debug("storage client", "url", c.url, "auth", c.auth.String())
	return c, nil
}

// NewLeaseBlob is NewContainer for cfg's container, then the lease blob
// cfg.Blob of it, with its pause marker (names.go). It makes no request.
func NewLeaseBlob(cfg ClientConfig) (*Blob, error) {
	name := cfg.Blob
	if err := validateBlobName(name); err != nil {
		return nil, err
	}
	if strings.Contains(name, MarkerSep) {
		return nil, configErr("lease name", "%q: %q is reserved for the blobs leaderrun keeps beside a lease (slots, markers)", name, MarkerSep)
	}
	cfg.Blob = ""
	c, err := NewContainer(cfg)
	if err != nil {
		return nil, err
	}
	b, err := c.Blob(name)
	if err != nil {
		return nil, err
	}
	if b.marker, err = c.Blob(PauseBlob(name)); err != nil {
		return nil, err
	}
	return b, nil
}

// Blob addresses a blob of the container (names.go) with its credentials
// and transport. It makes no request.
func (c *Container) Blob(name string) (*Blob, error) {
	if err := validateBlobName(name); err != nil {
		return nil, err
	}
	url := c.BlobURL(name)
	api, err := newAzBlob(c, url)
	if err != nil {
		return nil, configErr("endpoint", "%s", c.sanitize(err))
	}
	return &Blob{c: c, name: name, url: url, api: api}, nil
}

// BlobURL is the URL of a blob of the container, without any query string.
func (c *Container) BlobURL(blob string) string { return c.url + "/" + escapeBlobName(blob) }
