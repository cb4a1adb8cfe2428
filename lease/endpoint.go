// Where the lease blob is: connection strings, the blob service endpoint,
// and Azure's naming rules for accounts, containers and blobs. Nothing here
// makes a request, and no error echoes a secret.

package lease

import (
	"cmp"
	"net"
	"net/url"
	"strings"
)

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

// validateContainer applies Azure's container naming rules.
func validateContainer(name string) error {
	bad := func(why string) error { return configErr("container name", "%q: %s", name, why) }
	if len(name) < 3 || len(name) > 63 {
		return bad("must be 3 to 63 characters long")
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		switch {
		case ch >= 'a' && ch <= 'z', ch >= '0' && ch <= '9':
		case ch == '-':
			if i == 0 || i == len(name)-1 {
				return bad("must start and end with a letter or digit")
			}
			if name[i-1] == '-' {
				return bad("must not contain consecutive hyphens")
			}
		default:
			return bad("only lowercase letters, digits and hyphens are allowed")
		}
	}
	return nil
}

// validateBlobName refuses names Azure rejects or a URL would rewrite.
func validateBlobName(name string) error {
	bad := func(why string) error { return configErr("lease name", "%q: %s", name, why) }
	switch {
	case name == "":
		return configErr("lease name", "empty: set --lease (LEADERRUN_LEASE)")
	case len(name) > 1024:
		return bad("longer than 1024 characters")
	case strings.HasSuffix(name, "."):
		return bad("must not end with a dot")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return bad("control characters and backslashes are not allowed")
		}
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad(`empty, "." and ".." path segments are not allowed`)
		}
	}
	return nil
}

// validateAccount applies Azure's account naming rules (it becomes a host name).
func validateAccount(name string) error {
	if len(name) < 3 || len(name) > 24 {
		return configErr("storage account", "%q: must be 3 to 24 characters long", name)
	}
	for i := 0; i < len(name); i++ {
		if ch := name[i]; !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9') {
			return configErr("storage account", "%q: only lowercase letters and digits are allowed", name)
		}
	}
	return nil
}

func escapeBlobName(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
