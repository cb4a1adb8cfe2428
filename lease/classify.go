// classify.go: how a failed storage or network request is classified, once
// (mapError): the kinds that decide what the caller does, and the hint that
// says what to do.

package lease

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
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
		se.StatusCode, se.Code, se.setting, se.date = re.StatusCode, re.ErrorCode, settingOf(re), answerDate(re.RawResponse)
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
			se.kind = kindPermanent // the container's setting (account.go), not a conflict
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
	}
	return ""
}

// lacksPermission: the service says the credential lacks a permission.
func lacksPermission(se *StorageError) bool {
	switch bloberror.Code(se.Code) {
	case bloberror.AuthorizationPermissionMismatch, bloberror.AuthorizationResourceTypeMismatch,
		bloberror.AuthorizationServiceMismatch:
		return true
	}
	return false
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
