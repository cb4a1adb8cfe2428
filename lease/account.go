// Account settings: what Get Account Information and Get Container
// Properties say, and the cause and fix that mapError (classify.go) puts in
// every refusal an account's settings cause (shared-key access disabled, an
// immutability policy or a legal hold, an API version not accepted).
// Lifecycle rules that delete blobs and a geo failover never show in a
// data-plane answer: the README's "Before the fleet relies on it" covers them.

package lease

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// The service's error codes for the account's settings; bloberror (azblob
// v1.8.0) lacks most of them.
const (
	codeKeyBasedAuthNotPermitted    = bloberror.Code("KeyBasedAuthenticationNotPermitted")
	codeImmutableDueToPolicy        = bloberror.BlobImmutableDueToPolicy
	codeImmutableDueToLegalHold     = bloberror.Code("BlobImmutableDueToLegalHold")
	codeContainerHasLegalHold       = bloberror.Code("ContainerHasLegalHold")
	codeContainerImmutabilityLocked = bloberror.Code("ContainerImmutabilityPolicyLocked")
)

const (
	headerVersion = "x-ms-version"
	hnsFolderKey  = "hdi_isfolder" // marks a directory of a hierarchical-namespace account

	immutableCause = "the service refuses every change to a blob already there, so leaderrun cannot record a term, a run's end or a resume"
	immutableFix   = "use a container without one (--container)"
)

// setting is the account's or the container's setting a refusal comes from.
type setting int

const (
	settingNone         setting = iota
	settingKeyAuthOff           // shared-key access disabled on the account
	settingLegalHold            // a legal hold on the container
	settingImmutability         // an immutability policy on the container
	settingVersion              // the service does not accept the API version sent
)

// settingOf tells which setting, if any, an answer comes from.
func settingOf(re *azcore.ResponseError) setting {
	switch {
	case bloberror.HasCode(re, codeKeyBasedAuthNotPermitted):
		return settingKeyAuthOff
	case bloberror.HasCode(re, codeImmutableDueToLegalHold, codeContainerHasLegalHold):
		return settingLegalHold
	case bloberror.HasCode(re, codeImmutableDueToPolicy, codeContainerImmutabilityLocked):
		return settingImmutability
	}
	if _, ok := versionRefused(re); ok {
		return settingVersion
	}
	return settingNone
}

// accountHint is the cause and fix of a refusal from setting s; "" for none.
func (c *Container) accountHint(s setting, re *azcore.ResponseError) string {
	switch s {
	case settingKeyAuthOff:
		return "shared-key access is disabled on this storage account (AllowSharedKeyAccess=false), which refuses its keys " +
			"and the SAS tokens they sign: use Microsoft Entra ID (unset AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY " +
			"and AZURE_STORAGE_SAS_TOKEN, and grant this host's identity the 'Storage Blob Data Contributor' role on container " +
			c.name + ") or a user delegation SAS"
	case settingLegalHold:
		return "container " + c.name + " has a legal hold: " + immutableCause + "; " + immutableFix
	case settingImmutability:
		return "container " + c.name + " has an immutability policy: " + immutableCause + "; " + immutableFix
	case settingVersion:
		v := "the API version this leaderrun sends"
		if sent, _ := versionRefused(re); sent != "" {
			v = "API version " + sent + ", which this leaderrun sends"
		}
		return "the service does not accept " + v + " (Azure Stack Hub and older emulators accept older versions only): " +
			"use an Azure Storage account, or Azurite 3.37 or later"
	}
	return ""
}

// versionRefused reports a 400 InvalidHeaderValue about x-ms-version, and
// the version sent ("" if unknown). The body names the header; a HEAD
// answer has none, and since leaderrun checks every other header it sends,
// one without a body is taken to be about the version too.
func versionRefused(re *azcore.ResponseError) (sent string, ok bool) {
	if re.StatusCode != http.StatusBadRequest || !bloberror.HasCode(re, bloberror.InvalidHeaderValue) {
		return "", false
	}
	resp := re.RawResponse
	if resp == nil {
		return "", true
	}
	if resp.Request != nil {
		sent = headerValue(resp.Request.Header, headerVersion)
	}
	body, err := runtime.Payload(resp)
	if err != nil || len(bytes.TrimSpace(body)) == 0 {
		return sent, true
	}
	lower := bytes.ToLower(body)
	return sent, bytes.Contains(lower, []byte(headerVersion)) || bytes.Contains(lower, []byte("api version"))
}

// isDirectory reports whether a blob's metadata (names lowercased) marks a
// directory of a hierarchical-namespace account, which lists one as a
// zero-length blob with hdi_isfolder=true.
func isDirectory(md map[string]string) bool { return md[hnsFolderKey] == "true" }

// directoryError refuses a lease name that a blob named NAME/… made a
// directory of a hierarchical-namespace account.
func directoryError(name string) *ConfigError {
	return configErr("lease name", "%q is a directory on this account (hierarchical namespace: a blob named %q makes it one): "+
		"choose a lease name that no other blob's name begins with followed by '/'", name, name+"/…")
}

// accountInfo is what Get Account Information says.
type accountInfo struct {
	Kind, SKU string // "" if not said
	HNS       bool   // hierarchical namespace (Data Lake Storage)
}

// containerInfo is what Get Container Properties says of the settings that
// refuse writes.
type containerInfo struct {
	ImmutabilityPolicy, LegalHold bool
}

func (a *azContainer) accountInfo(ctx context.Context) (accountInfo, error) {
	r, err := a.container.GetAccountInfo(ctx, nil)
	if err != nil {
		return accountInfo{}, a.c.fail("get account information", err)
	}
	return accountInfo{Kind: string(deref(r.AccountKind)), SKU: string(deref(r.SKUName)), HNS: deref(r.IsHierarchicalNamespaceEnabled)}, nil
}

func (a *azContainer) containerInfo(ctx context.Context) (containerInfo, error) {
	r, err := a.container.GetProperties(ctx, nil)
	if err != nil {
		return containerInfo{}, a.c.fail("get container properties", err)
	}
	return containerInfo{ImmutabilityPolicy: deref(r.HasImmutabilityPolicy), LegalHold: deref(r.HasLegalHold)}, nil
}

// headerValue is h's value for name in any case: the SDK sets its x-ms-*
// request headers in lowercase, past http.Header's canonical form.
func headerValue(h http.Header, name string) string {
	if v := h.Get(name); v != "" {
		return v
	}
	for k, vs := range h {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

// answerDate is a raw answer's Date header; zero if absent or malformed.
func answerDate(resp *http.Response) time.Time {
	if resp == nil {
		return time.Time{}
	}
	t, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
