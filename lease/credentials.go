// Credentials: which of the environment's storage credentials a client
// uses (in the README's order), the SDK credential built from them, and the
// bounded HTTP transport every SDK client shares.

package lease

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
)

type authMode int

const (
	authEntra authMode = iota
	authSharedKey
	authSAS
)

func (a authMode) String() string {
	switch a {
	case authSharedKey:
		return "shared key"
	case authSAS:
		return "SAS token"
	}
	return "Microsoft Entra ID"
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

// pickCredentials applies the order of ClientConfig's credentials. The
// endpoint of cfg overrides a connection string's BlobEndpoint.
func pickCredentials(cfg ClientConfig) (credentialSource, error) {
	src := credentialSource{account: cfg.Account, endpoint: cfg.Endpoint}
	switch {
	case cfg.ConnectionString != "":
		cs, err := parseConnectionString(cfg.ConnectionString)
		if err != nil {
			return src, err
		}
		src.account, src.key, src.sas, src.fromConnString = cs.account, cs.key, cs.sas, true
		if src.endpoint == "" {
			src.endpoint = cs.endpoint
		}
		src.secrets = append(src.secrets, cfg.ConnectionString, cs.key, cs.sas)
	case cfg.AccountKey != "":
		if src.account == "" {
			return src, configErr("credentials", "AZURE_STORAGE_KEY needs the storage account name (AZURE_STORAGE_ACCOUNT or --account)")
		}
		src.key = cfg.AccountKey
		src.secrets = append(src.secrets, src.key)
	case cfg.SASToken != "":
		src.sas = strings.TrimPrefix(strings.TrimSpace(cfg.SASToken), "?")
		if src.sas == "" {
			return src, configErr("credentials", "AZURE_STORAGE_SAS_TOKEN is empty")
		}
		src.secrets = append(src.secrets, cfg.SASToken, src.sas)
	}
	switch {
	case src.key != "":
		src.auth = authSharedKey
	case src.sas != "":
		src.auth = authSAS
	default:
		src.auth = authEntra
	}
	return src, nil
}

// sdkAuth builds the SDK's credential for src: a Shared Key credential, the
// SAS (sent in the URL), or DefaultAzureCredential, whose token requests
// use the same bounded transport.
func (c *Container) sdkAuth(src credentialSource, opts azcore.ClientOptions) (azAuth, error) {
	var auth azAuth
	switch src.auth {
	case authSharedKey:
		cred, err := blob.NewSharedKeyCredential(src.account, src.key)
		if err != nil {
			return auth, configErr("credentials", "the account key is not valid base64")
		}
		auth.key = cred
	case authSAS:
		auth.sas = src.sas
	default:
		cred, err := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{
			ClientOptions: azcore.ClientOptions{Transport: opts.Transport},
		})
		if err != nil {
			return auth, &StorageError{Op: "credential", Err: errors.New(c.sanitize(err)), kind: kindPermanent, summary: noCredential,
				Hint: "no Microsoft Entra ID credential is configured on this host"}
		}
		auth.token = cred
	}
	return auth, nil
}

// newTransport bounds dialing, the TLS handshake and the wait for response
// headers, and speaks HTTP/1.1 only, so that a request cut by its deadline
// takes its connection with it (a stuck HTTP/2 connection would hang every
// later renewal until the lease is lost).
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
	return &http.Client{Transport: tr}
}
