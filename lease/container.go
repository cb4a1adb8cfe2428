package lease

// A container of leases: where it is (ClientConfig, connection strings, the
// blob service endpoint), which of the environment's storage credentials a
// client uses (in the README's order), the SDK credential built from them,
// the bounded HTTP transport every SDK client shares, and the blobs of the
// container. No error echoes a secret.

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/exit"
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
	Container, Blob string // Blob: the lease name (may contain '/') for NewLeaseBlob; "" for NewContainer
	// Account is the storage account name; Endpoint the blob service URL
	// (https://<account>.blob.core.windows.net by default), which overrides
	// a connection string's BlobEndpoint.
	Account, Endpoint string
	// Credentials, in this order: ConnectionString; Account + AccountKey;
	// SASToken (with Account or Endpoint); otherwise Microsoft Entra ID
	// (azidentity.DefaultAzureCredential).
	ConnectionString, AccountKey, SASToken string
	Logger                                 hclog.Logger
	// Transport, if set, carries every request instead of the bounded HTTP
	// transport (newTransport): a test's in-memory service; Rand, if set,
	// draws the backoff of the container's own retries (a pause's write),
	// so that a test's seed repeats them (Config.Rand does the Elector's).
	// The binary sets neither.
	Transport policy.Transporter
	Rand      rand.Source
}

// Container is a container of leases and what its blobs share. It is safe
// for concurrent use.
type Container struct {
	name  string
	url   string                    // never with a query string
	src   credentialSource          // its secrets redacted from every error message
	key   *blob.SharedKeyCredential // with authSharedKey (authSAS sends src.sas in the URL)
	token azcore.TokenCredential    // with authEntra
	opts  azcore.ClientOptions
	sdk   *container.Client // the SDK's client of the container, shared by its blobs
	api   containerAPI
	log   hclog.Logger
	dice  *dice // ClientConfig.Rand's draws
}

// NewContainer checks cfg, whose Blob must be empty, and builds the Azure
// SDK's client of the container (clientOptions). It makes no request. A
// configuration that cannot work is a *ConfigError.
func NewContainer(cfg ClientConfig) (*Container, error) {
	if cfg.Blob != "" {
		return nil, configErr("lease name", "%s: a container client has none", exit.Quote(cfg.Blob))
	}
	if err := validateContainer(cfg.Container); err != nil {
		return nil, err
	}
	src, err := pickCredentials(cfg)
	if err != nil {
		return nil, err
	}
	c := &Container{name: cfg.Container, src: src, log: cmp.Or(cfg.Logger, hclog.NewNullLogger()).Named("lease"), dice: newDice(cfg.Rand)}
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
	c.opts = clientOptions(loopback, cfg.Transport)
	if err := c.sdkCredential(); err != nil {
		return nil, err
	}
	c.sdk, err = sdkClient(c, c.url, &container.ClientOptions{ClientOptions: c.opts},
		container.NewClientWithSharedKeyCredential, container.NewClientWithNoCredential, container.NewClient)
	if err != nil {
		return nil, configErr("endpoint", "%s", c.sanitize(err))
	}
	c.api = &azContainer{c: c, container: c.sdk}
	c.log.Debug("storage client", "url", c.url, "auth", c.src.auth.String())
	return c, nil
}

// NewLeaseBlob is NewContainer for cfg's container, then the lease blob
// cfg.Blob of it, with its pause and trigger markers and its deputy's place
// (names.go). It makes no request.
func NewLeaseBlob(cfg ClientConfig) (*Blob, error) {
	name := cfg.Blob
	if err := validateBlobName(name); err != nil {
		return nil, err
	}
	if strings.Contains(name, MarkerSep) {
		return nil, configErr("lease name", "%s: %q is reserved for the blobs leaderrun keeps beside a lease (slots, markers)", exit.Quote(name), MarkerSep)
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
	if b.trigger, err = c.Blob(TriggerBlob(name)); err != nil {
		return nil, err
	}
	if b.deputy, err = c.Blob(DeputyBlob(name)); err != nil {
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
	bb, err := sdkClient(c, url, &blockblob.ClientOptions{ClientOptions: c.opts},
		blockblob.NewClientWithSharedKeyCredential, blockblob.NewClientWithNoCredential, blockblob.NewClient)
	if err != nil {
		return nil, configErr("endpoint", "%s", c.sanitize(err))
	}
	return &Blob{c: c, name: name, url: url, api: &azBlob{c: c, blob: bb.BlobClient(), blockBlob: bb}}, nil
}

// BlobURL is the URL of a blob of the container, without any query string.
func (c *Container) BlobURL(blob string) string { return c.url + "/" + escapeBlobName(blob) }

// URL is the container's URL, without any query string, SAS or credential.
func (c *Container) URL() string { return c.url }

// CredentialKind is which of ClientConfig's credentials a client uses.
type CredentialKind int

const (
	CredentialEntraID   CredentialKind = iota // Microsoft Entra ID (DefaultAzureCredential)
	CredentialSharedKey                       // an account key, alone or in a connection string
	CredentialSAS                             // a SAS token, alone or in a connection string
)

// Credential is the credential a client uses, as it may be shown: never
// its secret.
type Credential struct {
	Kind    CredentialKind
	Account string // the storage account; "" when only an endpoint names it
	// FromConnectionString: it came from ClientConfig.ConnectionString.
	FromConnectionString bool
	// SAS is a SAS token's fields (sp, se, skoid, …) without its signature;
	// nil without a SAS token, or if the token does not parse as a query.
	SAS url.Values
}

// Credential is the credential the container's requests carry.
func (c *Container) Credential() Credential {
	cred := Credential{Account: c.src.account, FromConnectionString: c.src.fromConnString}
	switch c.src.auth {
	case authEntra:
		cred.Kind = CredentialEntraID
	case authSharedKey:
		cred.Kind = CredentialSharedKey
	case authSAS:
		cred.Kind = CredentialSAS
		if fields, err := url.ParseQuery(c.src.sas); err == nil {
			fields.Del("sig")
			cred.SAS = fields
		}
	}
	return cred
}

type authMode int

const (
	authEntra authMode = iota
	authSharedKey
	authSAS
)

func (a authMode) String() string {
	return [...]string{authEntra: "Microsoft Entra ID", authSharedKey: "shared key", authSAS: "SAS token"}[a]
}

// credentialSource is what the configuration gives a client: the account
// and the endpoint (either may be empty), the secret in use and the strings
// to redact from every error.
type credentialSource struct {
	auth              authMode
	account, endpoint string
	key, sas          string
	secrets           []string
	fromConnString    bool // the credential came from a connection string
}

// pickCredentials applies the order of ClientConfig's credentials; without
// any, src.auth is authEntra. The endpoint of cfg overrides a connection
// string's BlobEndpoint.
func pickCredentials(cfg ClientConfig) (credentialSource, error) {
	src := credentialSource{account: cfg.Account, endpoint: cfg.Endpoint}
	switch {
	case cfg.ConnectionString != "":
		var err error
		if src, err = parseConnectionString(cfg.ConnectionString); err != nil {
			return src, err
		}
		src.endpoint, src.fromConnString = cmp.Or(cfg.Endpoint, src.endpoint), true
		src.secrets = append(src.secrets, cfg.ConnectionString, src.key, src.sas)
	case cfg.AccountKey != "":
		if src.account == "" {
			return src, configErr("credentials", "AZURE_STORAGE_KEY needs the storage account name (AZURE_STORAGE_ACCOUNT or --account)")
		}
		src.auth, src.key = authSharedKey, cfg.AccountKey
		src.secrets = append(src.secrets, src.key)
	case cfg.SASToken != "":
		src.auth, src.sas = authSAS, strings.TrimPrefix(strings.TrimSpace(cfg.SASToken), "?")
		if src.sas == "" {
			return src, configErr("credentials", "AZURE_STORAGE_SAS_TOKEN is empty")
		}
		src.secrets = append(src.secrets, cfg.SASToken, src.sas)
	}
	return src, nil
}

// parseConnectionString reads the Azure Storage connection string format
// into a source's credential, account and endpoint. Errors name the
// problem, never the string's content.
func parseConnectionString(s string) (credentialSource, error) {
	fields := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return credentialSource{}, configErr("connection string", "a part is not Key=Value")
		}
		fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	if strings.EqualFold(fields["usedevelopmentstorage"], "true") {
		if fields["developmentstorageproxyuri"] != "" {
			return credentialSource{}, configErr("connection string", "DevelopmentStorageProxyUri is not supported; use BlobEndpoint")
		}
		// Azurite's defaults, spelled out.
		return credentialSource{auth: authSharedKey, account: devAccount, key: devKey, endpoint: devEndpoint}, nil
	}
	cs := credentialSource{
		auth:     authSharedKey, // a key comes before a SAS
		account:  fields["accountname"],
		key:      fields["accountkey"],
		sas:      strings.TrimPrefix(fields["sharedaccesssignature"], "?"),
		endpoint: fields["blobendpoint"],
	}
	switch {
	case cs.key == "" && cs.sas == "":
		return credentialSource{}, configErr("connection string", "it has neither AccountKey nor SharedAccessSignature")
	case cs.key == "":
		cs.auth = authSAS
	case cs.account == "":
		return credentialSource{}, configErr("connection string", "AccountKey needs AccountName")
	}
	if cs.endpoint == "" {
		if cs.account == "" {
			return credentialSource{}, configErr("connection string", "it has neither AccountName nor BlobEndpoint")
		}
		if err := validateAccount(cs.account); err != nil {
			return credentialSource{}, err
		}
		proto := cmp.Or(strings.ToLower(fields["defaultendpointsprotocol"]), "https")
		if proto != "https" && proto != "http" {
			return credentialSource{}, configErr("connection string", "DefaultEndpointsProtocol must be https or http")
		}
		cs.endpoint = proto + "://" + cs.account + ".blob." + cmp.Or(fields["endpointsuffix"], "core.windows.net")
	}
	return cs, nil
}

// checkEndpoint validates the blob service URL and returns it without a
// trailing slash, and whether its host is loopback, the only one plain http
// may go to (Azurite). Errors never echo the URL.
func checkEndpoint(endpoint string) (string, bool, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", false, configErr("endpoint", "not an absolute URL like https://account.blob.core.windows.net")
	}
	if u.User != nil {
		return "", false, configErr("endpoint", "user information in the URL is not allowed")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", false, configErr("endpoint", "a query string or fragment is not allowed (put a SAS token in AZURE_STORAGE_SAS_TOKEN)")
	}
	loopback := isLoopback(u.Hostname())
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !loopback {
			return "", false, configErr("endpoint", "plain http:// to %s is refused: use https (http is allowed to loopback only)", u.Hostname())
		}
	default:
		return "", false, configErr("endpoint", "scheme %q: want https", u.Scheme)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	return strings.TrimRight(u.String(), "/"), loopback, nil
}

func isLoopback(host string) bool {
	return strings.EqualFold(host, "localhost") || net.ParseIP(host).IsLoopback() // nil (no IP) is not loopback
}

// sdkCredential builds the SDK's credential for c.src: a Shared Key
// credential, or DefaultAzureCredential, whose token requests use the same
// bounded transport. A SAS needs none.
func (c *Container) sdkCredential() error {
	switch c.src.auth {
	case authSharedKey:
		cred, err := blob.NewSharedKeyCredential(c.src.account, c.src.key)
		if err != nil {
			return configErr("credentials", "the account key is not valid base64")
		}
		c.key = cred
	case authEntra:
		cred, err := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{
			ClientOptions: azcore.ClientOptions{Transport: c.opts.Transport},
		})
		if err != nil {
			return &StorageError{Op: "credential", Err: errors.New(c.sanitize(err)), kind: kindPermanent, summary: noCredential,
				Hint: "no Microsoft Entra ID credential is configured on this host"}
		}
		c.token = cred
	}
	return nil
}

// newTransport bounds dialing, the TLS handshake and the wait for response
// headers, and speaks HTTP/1.1 only, so that a request cut by its deadline
// takes its connection with it (a stuck HTTP/2 connection would hang every
// later renewal until the lease is lost). It follows no redirect: a signed
// request sent again to the address a 3xx names would carry its
// Authorization (a Shared Key signature, a bearer token) there, over plain
// http too; the 3xx is the answer, an error.
func newTransport() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = tlsTimeout
	tr.ResponseHeaderTimeout = headerTimeout
	tr.ExpectContinueTimeout = time.Second
	tr.IdleConnTimeout = 60 * time.Second
	tr.ForceAttemptHTTP2 = false
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	tr.Protocols = &protocols
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}
