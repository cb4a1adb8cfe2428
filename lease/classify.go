package lease

// classify.go: how a failed storage or network request is classified, once
// (mapError): the kinds that decide what the caller does, and the hint that
// says what to do, with the cause and fix of the refusals an account's
// settings cause (shared-key access disabled, an immutability policy or a
// legal hold, an API version not accepted). Lifecycle rules that delete
// blobs and a geo failover never show in a data-plane answer: the README's
// "Before the fleet relies on it" covers them.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// errKind is how a storage failure is handled.
type errKind int

const (
	kindTransient        errKind = iota // retry: network, timeout, 408, 429, 5xx
	kindPermanent                       // give up: 400, 401, 403, unknown 4xx, bad TLS, no credential
	kindHeld                            // 409 LeaseAlreadyPresent / LeaseIsBreakingAndCannotBeAcquired
	kindNotLeased                       // 409 LeaseNotPresentWithLeaseOperation
	kindConflict                        // any other 409 or 412
	kindBlobMissing                     // 404 BlobNotFound (or a 404 without a code)
	kindContainerMissing                // 404 ContainerNotFound
	kindExists                          // 409 BlobAlreadyExists / ContainerAlreadyExists
)

// Error codes compared with StorageError.Code outside mapError.
const (
	codeBlobNotFound      = string(bloberror.BlobNotFound)
	codeContainerNotFound = string(bloberror.ContainerNotFound)
	codeConditionNotMet   = string(bloberror.ConditionNotMet)
	codeLeaseBreaking     = string(bloberror.LeaseIsBreakingAndCannotBeAcquired)
)

// fail maps a failed request's error; nil stays nil. The edge (azblob.go)
// calls it once on what the SDK returns: nothing past it sees an SDK error.
func (c *Container) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return c.mapError(op, err)
}

// mapError classifies a storage or network error into a *StorageError: an
// answer (*azcore.ResponseError) by status and x-ms-error-code, anything
// else by its cause. It never keeps the original error, whose text may hold
// the request URL with its SAS signature.
func (c *Container) mapError(op string, err error) *StorageError {
	var se *StorageError
	if errors.As(err, &se) {
		return se
	}
	se = &StorageError{Op: op}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		se.StatusCode, se.Code, se.setting, se.date = re.StatusCode, re.ErrorCode, settingOf(re), AnswerDate(re.RawResponse)
		switch {
		case re.StatusCode == http.StatusNotFound && bloberror.HasCode(err, bloberror.ContainerNotFound):
			se.kind = kindContainerMissing
		case re.StatusCode == http.StatusNotFound && (re.ErrorCode == "" || bloberror.HasCode(err, bloberror.BlobNotFound)):
			se.kind = kindBlobMissing // a HEAD answer has no body, and may have no code
		case bloberror.HasCode(err, bloberror.LeaseAlreadyPresent, bloberror.LeaseIsBreakingAndCannotBeAcquired):
			se.kind = kindHeld
		case bloberror.HasCode(err, bloberror.LeaseNotPresentWithLeaseOperation):
			se.kind = kindNotLeased
		case bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ContainerAlreadyExists):
			se.kind = kindExists
		case bloberror.HasCode(err, bloberror.ContainerBeingDeleted):
			se.kind = kindTransient
		case se.setting == settingLegalHold || se.setting == settingImmutability:
			se.kind = kindPermanent // the container's setting (settingOf), not a conflict
		case re.StatusCode == http.StatusConflict || re.StatusCode == http.StatusPreconditionFailed:
			se.kind = kindConflict
		case re.StatusCode == http.StatusRequestTimeout || re.StatusCode == http.StatusTooManyRequests ||
			re.StatusCode >= 500:
			se.kind = kindTransient
		default:
			se.kind = kindPermanent
		}
		se.Hint = cmp.Or(c.accountHint(se.setting, re), c.hint(se))
		return se
	}

	se.Err = errors.New(c.sanitize(err))
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		se.kind = kindTransient
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		se.kind = kindPermanent
		se.Hint = "no such host: check the account name or the endpoint"
	case errors.As(err, new(*tls.CertificateVerificationError)) || errors.As(err, new(x509.UnknownAuthorityError)) ||
		errors.As(err, new(x509.HostnameError)) || errors.As(err, new(x509.CertificateInvalidError)):
		se.kind = kindPermanent
		se.Hint = "the endpoint's TLS certificate is not trusted by this host"
	case errors.As(err, new(interface{ NonRetriable() })):
		// The SDK marks credential failures (no Entra ID token) this way.
		se.kind, se.summary = kindPermanent, noCredential
		if c.src.auth == authEntra {
			se.Hint = "no Microsoft Entra ID credential worked: on Azure VMs enable a managed identity; " +
				"elsewhere use 'az login', or set AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN"
		}
	default:
		se.kind = kindTransient
	}
	return se
}

// hint says what to do about an answer, where there is something to do.
func (c *Container) hint(se *StorageError) string {
	permission := lacksPermission(se)
	switch {
	case se.StatusCode == http.StatusForbidden || se.StatusCode == http.StatusUnauthorized:
		switch c.src.auth {
		case authEntra:
			if permission {
				return "grant this identity the 'Storage Blob Data Contributor' role on container " +
					c.name + " or on the storage account"
			}
			return "the identity was refused: check its role ('Storage Blob Data Contributor' on container " +
				c.name + " or on the account), its tenant, and the account's network rules"
		case authSAS:
			if permission {
				return "the SAS token lacks a permission: it needs read, add, create and write on the blob " +
					"(and create on the container if it does not exist)"
			}
			return "the SAS token is invalid, expired, lacks a permission, or is not allowed from this address"
		default:
			return "check the account name and key, this host's clock (key-signed requests carry its time), " +
				"and the account's network rules"
		}
	case se.kind == kindPermanent && se.StatusCode == http.StatusNotFound:
		return "check the account name and the endpoint"
	case se.StatusCode >= 300 && se.StatusCode < 400:
		return "the endpoint answered with a redirect, which leaderrun never follows: give the blob service's own address"
	}
	return ""
}

// BlobMissing reports that the blob does not exist (404 BlobNotFound, or a
// 404 without a code, as a read's answer has none).
func (e *StorageError) BlobMissing() bool { return e.kind == kindBlobMissing }

// ContainerMissing reports that the container does not exist (404
// ContainerNotFound).
func (e *StorageError) ContainerMissing() bool { return e.kind == kindContainerMissing }

// AlreadyExists reports that what a request would create exists already
// (409 BlobAlreadyExists or ContainerAlreadyExists).
func (e *StorageError) AlreadyExists() bool { return e.kind == kindExists }

// CredentialRefused reports that the credential was not accepted at all,
// as opposed to short of a permission (LacksPermission): a bad key or
// signature, shared-key access disabled, a token for another tenant, the
// account's network rules (401 or 403), or no Microsoft Entra ID token.
func (e *StorageError) CredentialRefused() bool {
	return e.summary == noCredential ||
		(e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden) && !e.LacksPermission()
}

// LacksPermission reports that the service accepted the credential and
// refused it a permission (403 AuthorizationPermissionMismatch, …): a
// role or a SAS permission is missing.
func (e *StorageError) LacksPermission() bool {
	return e.StatusCode == http.StatusForbidden && lacksPermission(e)
}

// VersionRefused reports that the service does not accept the API version
// sent (Azure Stack Hub, older emulators).
func (e *StorageError) VersionRefused() bool { return e.setting == settingVersion }

// lacksPermission: the service says the credential lacks a permission.
func lacksPermission(se *StorageError) bool {
	switch bloberror.Code(se.Code) {
	case bloberror.AuthorizationPermissionMismatch, bloberror.AuthorizationResourceTypeMismatch,
		bloberror.AuthorizationServiceMismatch:
		return true
	}
	return false
}

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

	immutableCause = "the service refuses every change to a blob already there, so leaderrun cannot record a term, a run's end or a resume"
	immutableFix   = "use a container without one (--container)"
)

// WritesRefused names the settings of s that refuse every change to a blob
// already there, with the cause and the fix ("a legal hold: the service
// refuses …; use a container without one (--container)"); "" if none.
func (s ContainerSettings) WritesRefused() string {
	var what []string
	if s.ImmutabilityPolicy {
		what = append(what, "an immutability policy")
	}
	if s.LegalHold {
		what = append(what, "a legal hold")
	}
	if len(what) == 0 {
		return ""
	}
	return strings.Join(what, " and ") + ": " + immutableCause + "; " + immutableFix
}

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
		return "container " + c.name + " has " + ContainerSettings{LegalHold: true}.WritesRefused()
	case settingImmutability:
		return "container " + c.name + " has " + ContainerSettings{ImmutabilityPolicy: true}.WritesRefused()
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
		sent = HeaderValue(resp.Request.Header, headerVersion)
	}
	body, err := runtime.Payload(resp)
	if err != nil || len(bytes.TrimSpace(body)) == 0 {
		return sent, true
	}
	lower := bytes.ToLower(body)
	return sent, bytes.Contains(lower, []byte(headerVersion)) || bytes.Contains(lower, []byte("api version"))
}

// HeaderValue is h's value for name in any case: the SDK sets its x-ms-*
// request headers in lowercase, past http.Header's canonical form.
func HeaderValue(h http.Header, name string) string {
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

// AnswerDate is a raw answer's Date header; zero if absent or malformed.
func AnswerDate(resp *http.Response) time.Time {
	if resp == nil {
		return time.Time{}
	}
	t, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

var (
	urlQuery  = regexp.MustCompile(`(?i)(https?://[^\s"'?]*)\?[^\s"']*`)
	sigParam  = regexp.MustCompile(`(?i)sig=[^&\s"']*`)
	rules     = regexp.MustCompile(`-{4,}`) // the SDK's section separators
	whitespce = regexp.MustCompile(`\s+`)
)

// maxCauseLen bounds a sanitized cause, so that an error stays one log line.
const maxCauseLen = 400

// sanitize renders err on one line without secrets: URLs lose their query
// string, SAS signatures and the credentials' secrets are redacted.
func (c *Container) sanitize(err error) string {
	s := err.Error()
	s = urlQuery.ReplaceAllString(s, "$1")
	s = sigParam.ReplaceAllString(s, "sig=REDACTED")
	for _, secret := range c.src.secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "REDACTED")
		}
	}
	s = rules.ReplaceAllString(s, " ")
	s = strings.TrimSpace(whitespce.ReplaceAllString(s, " "))
	if len(s) > maxCauseLen {
		s = s[:maxCauseLen] + "…"
	}
	return s
}
