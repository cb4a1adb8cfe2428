package faultproxy

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Azure error codes the proxy answers with.
const (
	codeServerBusy           = "ServerBusy"
	codeInternalError        = "InternalError"
	codeInvalidInput         = "InvalidInput"
	codeAuthenticationFailed = "AuthenticationFailed"
	codeResourceNotFound     = "ResourceNotFound"
)

// codeForStatus is the Azure error code that goes with an HTTP status.
func codeForStatus(status int) string {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return codeServerBusy
	case http.StatusBadRequest:
		return codeInvalidInput
	case http.StatusForbidden:
		return codeAuthenticationFailed
	case http.StatusNotFound:
		return codeResourceNotFound
	}
	if status >= 500 {
		return codeInternalError
	}
	return codeInvalidInput
}

// messageFor is the human part of an injected error. It says that the proxy,
// not the service, answered.
func messageFor(code string) string {
	switch code {
	case codeServerBusy:
		return "The server is busy; retry the request. (Injected by faultproxy.)"
	case codeInternalError:
		return "The server had an internal error; retry the request. (Injected by faultproxy.)"
	}
	return "Error " + code + " injected by faultproxy."
}

// writeAzureError answers r the way the Blob service answers a failed
// request: the status, the x-ms-error-code and x-ms-request-id headers, the
// client's x-ms-client-request-id and x-ms-version echoed, and an XML error
// body (none for HEAD, as the service does). net/http adds the Date header.
// code must be letters and digits only (it is written unescaped).
func writeAzureError(w http.ResponseWriter, r *http.Request, status int, code string) {
	writeServiceError(w, r, status, code, messageFor(code), "")
}

// writeServiceError is writeAzureError with the message given (escaped
// here) and more elements for the error body, already XML ("" for none),
// such as the service's <HeaderName> of a refused header. A Date header
// already set is kept.
func writeServiceError(w http.ResponseWriter, r *http.Request, status int, code, message, more string) {
	id := requestID()
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>%s</Code><Message>%s\nRequestId:%s\nTime:%s</Message>%s</Error>",
		code, xmlEscape(message), id, time.Now().UTC().Format("2006-01-02T15:04:05.0000000Z"), more)
	h := w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("x-ms-error-code", code)
	h.Set("x-ms-request-id", id)
	if v := r.Header.Get("x-ms-client-request-id"); v != "" {
		h.Set("x-ms-client-request-id", v)
	}
	if v := r.Header.Get("x-ms-version"); v != "" {
		h.Set("x-ms-version", v)
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(body)) // a client that left gets nothing anyway
	}
}

// requestID is a random version-4 UUID, the shape of Azure's request IDs.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
