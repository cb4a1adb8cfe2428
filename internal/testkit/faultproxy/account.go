package faultproxy

// account.go: the storage account's and the container's settings that the
// emulator cannot take, answered as the service answers them: a
// hierarchical namespace, a legal hold, an immutability policy, shared-key
// access disabled, an older service that refuses the API version, and a
// service clock that is off from this host's.

import (
	"encoding/xml"
	"net/http"
	"strings"
	"time"
)

// Account is a storage account's settings, and its container's, as the
// service shows them in its answers. The zero Account changes nothing.
// Its refusals are answered by the proxy (the request is not forwarded)
// and are not counted in Counts.Injected; its headers are set on the
// target's own answers.
type Account struct {
	// HNS: Get Account Information answers x-ms-is-hns-enabled: true
	// (a Data Lake Storage account).
	HNS bool

	// LegalHold: Get Container Properties answers x-ms-has-legal-hold:
	// true, and Set Blob Metadata and Delete Blob are refused 409
	// BlobImmutableDueToLegalHold, as the service refuses every change to
	// a blob already in such a container.
	LegalHold bool

	// ImmutabilityPolicy: the same with x-ms-has-immutability-policy:
	// true and 409 BlobImmutableDueToPolicy.
	ImmutabilityPolicy bool

	// SharedKeyDisabled: every request signed with the account's key (a
	// SharedKey Authorization header, or a SAS that is not a user
	// delegation SAS) is refused 403 KeyBasedAuthenticationNotPermitted,
	// as with AllowSharedKeyAccess=false. Bearer tokens pass.
	SharedKeyDisabled bool

	// MaxVersion, if not empty, is the latest API version (x-ms-version,
	// YYYY-MM-DD) the service accepts, as an older service (Azure Stack
	// Hub) has one: a request with a later version is refused 400
	// InvalidHeaderValue naming the header, before anything else.
	MaxVersion string

	// ClockOffset moves the Date header of every answer (the target's and
	// the refusals above) by this much: the service's clock runs ahead of
	// this host's by ClockOffset (behind when negative).
	ClockOffset time.Duration
}

// The service's answers to the settings above.
const (
	codeInvalidHeaderValue       = "InvalidHeaderValue"
	codeKeyBasedAuthNotPermitted = "KeyBasedAuthenticationNotPermitted"
	codeBlobImmutableDueToHold   = "BlobImmutableDueToLegalHold"
	codeBlobImmutableDueToPolicy = "BlobImmutableDueToPolicy"

	messageInvalidHeaderValue   = "The value for one of the HTTP headers is not in the correct format."
	messageKeyBasedAuth         = "Key based authentication is not permitted on this storage account."
	messageImmutableDueToHold   = "This operation is not permitted as the blob is immutable due to one or more legal holds."
	messageImmutableDueToPolicy = "This operation is not permitted as the blob is immutable due to a policy."
	injectedTag                 = " (Injected by faultproxy.)"
)

// Headers, in canonical form.
const (
	headerAPIVersion         = "X-Ms-Version"
	headerHNS                = "X-Ms-Is-Hns-Enabled"
	headerLegalHold          = "X-Ms-Has-Legal-Hold"
	headerImmutabilityPolicy = "X-Ms-Has-Immutability-Policy"
	headerDate               = "Date"
)

// refuse answers r as the service would refuse it under a's settings, and
// reports whether it did (then r must not be forwarded).
func (a Account) refuse(w http.ResponseWriter, r *http.Request) bool {
	var (
		status          int
		code, msg, more string
	)
	switch v := r.Header.Get(headerAPIVersion); {
	case a.MaxVersion != "" && v > a.MaxVersion:
		status, code, msg = http.StatusBadRequest, codeInvalidHeaderValue, messageInvalidHeaderValue
		more = "<HeaderName>x-ms-version</HeaderName><HeaderValue>" + xmlEscape(v) + "</HeaderValue>"
	case a.SharedKeyDisabled && keySigned(r):
		status, code, msg = http.StatusForbidden, codeKeyBasedAuthNotPermitted, messageKeyBasedAuth
	case a.LegalHold && blobChange(r):
		status, code, msg = http.StatusConflict, codeBlobImmutableDueToHold, messageImmutableDueToHold
	case a.ImmutabilityPolicy && blobChange(r):
		status, code, msg = http.StatusConflict, codeBlobImmutableDueToPolicy, messageImmutableDueToPolicy
	default:
		return false
	}
	if a.ClockOffset != 0 {
		w.Header().Set(headerDate, time.Now().Add(a.ClockOffset).UTC().Format(http.TimeFormat))
	}
	writeServiceError(w, r, status, code, msg+injectedTag, more)
	return true
}

// writer wraps w so that the target's answer to r shows a's settings; w
// itself when there is nothing to show.
func (a Account) writer(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	if a == (Account{}) {
		return w
	}
	return &accountWriter{ResponseWriter: w, a: a, r: r}
}

// accountWriter sets the account's headers on an answer as it is written.
type accountWriter struct {
	http.ResponseWriter
	a       Account
	r       *http.Request
	written bool
}

func (w *accountWriter) WriteHeader(status int) {
	if !w.written {
		w.written = true
		w.a.rewrite(w.Header(), w.r, status)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *accountWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (Flush).
func (w *accountWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rewrite sets a's headers on h, the answer to r with status.
func (a Account) rewrite(h http.Header, r *http.Request, status int) {
	if a.ClockOffset != 0 {
		now := time.Now()
		if t, err := http.ParseTime(h.Get(headerDate)); err == nil {
			now = t
		}
		h.Set(headerDate, now.Add(a.ClockOffset).UTC().Format(http.TimeFormat))
	}
	if status/100 != 2 {
		return
	}
	switch {
	case a.HNS && accountInfo(r):
		h.Set(headerHNS, "true")
	case containerProperties(r):
		if a.LegalHold {
			h.Set(headerLegalHold, "true")
		}
		if a.ImmutabilityPolicy {
			h.Set(headerImmutabilityPolicy, "true")
		}
	}
}

// accountInfo: Get Account Information (?restype=account&comp=properties).
func accountInfo(r *http.Request) bool {
	q := r.URL.Query()
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		strings.EqualFold(q.Get("restype"), "account") && strings.EqualFold(q.Get("comp"), "properties")
}

// containerProperties: Get Container Properties (?restype=container, no comp).
func containerProperties(r *http.Request) bool {
	q := r.URL.Query()
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		strings.EqualFold(q.Get("restype"), "container") && q.Get("comp") == ""
}

// blobChange: a change to a blob that exists, which an immutability
// policy or a legal hold refuses: Set Blob Metadata, Delete Blob.
func blobChange(r *http.Request) bool {
	q := r.URL.Query()
	if q.Get("restype") != "" {
		return false
	}
	return r.Method == http.MethodPut && strings.EqualFold(q.Get("comp"), "metadata") ||
		r.Method == http.MethodDelete && q.Get("comp") == ""
}

// keySigned: signed with the account's key, by a SharedKey header or a
// SAS (a user delegation SAS, signed with an Entra ID key, carries skoid).
func keySigned(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	if strings.HasPrefix(auth, "SharedKey ") || strings.HasPrefix(auth, "SharedKeyLite ") {
		return true
	}
	q := r.URL.Query()
	return auth == "" && q.Get("sig") != "" && q.Get("skoid") == ""
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
