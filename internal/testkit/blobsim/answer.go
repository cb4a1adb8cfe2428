package blobsim

// answer.go: what the service sends back, and how: an answer's status and
// headers, Azure's error answers (the x-ms-error-code header and the XML
// error body that the SDK's bloberror.HasCode reads), and the answer as an
// *http.Response (Transport) or written to an http.ResponseWriter
// (Handler). Also the service's headers: Date to the second, ETags,
// request IDs.

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"strconv"
	"time"
)

// failure is a refusal by the service's rules.
type failure struct {
	status int
	code   string
	// The element pair that names what was refused, as the service's
	// error body gives it: HeaderName/HeaderValue for a header,
	// QueryParameterName/QueryParameterValue for a query parameter.
	header, query, value string
}

func badHeader(name, value string) *failure {
	return &failure{status: http.StatusBadRequest, code: "InvalidHeaderValue", header: name, value: value}
}

func missingHeader(name string) *failure {
	return &failure{status: http.StatusBadRequest, code: "MissingRequiredHeader", header: name}
}

func badQuery(code, name, value string) *failure {
	return &failure{status: http.StatusBadRequest, code: code, query: name, value: value}
}

var (
	errContainerNotFound      = &failure{status: http.StatusNotFound, code: "ContainerNotFound"}
	errBlobNotFound           = &failure{status: http.StatusNotFound, code: "BlobNotFound"}
	errContainerAlreadyExists = &failure{status: http.StatusConflict, code: "ContainerAlreadyExists"}
	errBlobAlreadyExists      = &failure{status: http.StatusConflict, code: "BlobAlreadyExists"}
	errConditionNotMet        = &failure{status: http.StatusPreconditionFailed, code: "ConditionNotMet"}
	errNotModified            = &failure{status: http.StatusNotModified}
	errAuthentication         = &failure{status: http.StatusForbidden, code: "AuthenticationFailed"}
	errInvalidURI             = &failure{status: http.StatusBadRequest, code: "InvalidUri"}
	errInvalidResourceName    = &failure{status: http.StatusBadRequest, code: "InvalidResourceName"}
	errInvalidMetadata        = &failure{status: http.StatusBadRequest, code: "InvalidMetadata"}
	errEmptyMetadataKey       = &failure{status: http.StatusBadRequest, code: "EmptyMetadataKey"}
	errMetadataTooLarge       = &failure{status: http.StatusBadRequest, code: "MetadataTooLarge"}
	errNotModelled            = &failure{status: http.StatusNotImplemented, code: "NotImplemented"}
)

// messages are the service's words for its error codes.
var messages = map[string]string{
	"AuthenticationFailed":               "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.",
	"BlobAlreadyExists":                  "The specified blob already exists.",
	"BlobNotFound":                       "The specified blob does not exist.",
	"ConditionNotMet":                    "The condition specified using HTTP conditional header(s) is not met.",
	"ContainerAlreadyExists":             "The specified container already exists.",
	"ContainerNotFound":                  "The specified container does not exist.",
	"EmptyMetadataKey":                   "The key for one of the metadata key-value pairs is empty.",
	"InternalError":                      "Server encountered an internal error. Please try again after some time.",
	"InvalidHeaderValue":                 "The value for one of the HTTP headers is not in the correct format.",
	"InvalidInput":                       "One of the request inputs is not valid.",
	"InvalidMetadata":                    "The metadata specified is invalid. It has characters that are not permitted.",
	"InvalidQueryParameterValue":         "Value for one of the query parameters specified in the request URI is invalid.",
	"InvalidResourceName":                "The specified resource name contains invalid characters.",
	"InvalidUri":                         "The requested URI does not represent any resource on the server.",
	"LeaseAlreadyPresent":                "There is already a lease present.",
	"LeaseIdMismatchWithBlobOperation":   "The lease ID specified did not match the lease ID for the blob.",
	"LeaseIdMismatchWithLeaseOperation":  "The lease ID specified did not match the lease ID for the blob.",
	"LeaseIdMissing":                     "There is currently a lease on the blob and no lease ID was specified in the request.",
	"LeaseIsBreakingAndCannotBeAcquired": "The lease ID matched, but the lease is currently in breaking state and cannot be acquired until it is broken.",
	"LeaseIsBreakingAndCannotBeChanged":  "The lease ID matched, but the lease is currently in breaking state and cannot be changed.",
	"LeaseIsBrokenAndCannotBeRenewed":    "The lease ID matched, but the lease has been broken explicitly and cannot be renewed.",
	"LeaseNotPresentWithBlobOperation":   "There is currently no lease on the blob.",
	"LeaseNotPresentWithLeaseOperation":  "There is currently no lease on the blob.",
	"MetadataTooLarge":                   "The size of the specified metadata exceeds the maximum size permitted.",
	"MissingRequiredHeader":              "An HTTP header that's mandatory for this request is not specified.",
	"NotImplemented":                     "The request is outside what this in-memory model of the Blob service covers.",
	"OperationTimedOut":                  "Operation could not be completed within the specified time.",
	"OutOfRangeQueryParameterValue":      "One of the query parameters specified in the request URI is outside the permissible range.",
	"ServerBusy":                         "The server is busy.",
}

// usualCode is the service's usual error code for a status.
func usualCode(status int) string {
	switch status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return "ServerBusy"
	case http.StatusRequestTimeout:
		return "OperationTimedOut"
	case http.StatusBadRequest:
		return "InvalidInput"
	case http.StatusForbidden:
		return "AuthenticationFailed"
	case http.StatusNotFound:
		return "ResourceNotFound"
	case http.StatusPreconditionFailed:
		return "ConditionNotMet"
	}
	if status >= 500 {
		return "InternalError"
	}
	return "InvalidInput"
}

// answer is one response of the service.
type answer struct {
	status int
	code   string  // x-ms-error-code; "" on success
	hdr    []field // the operation's own headers
	ctype  string  // Content-Type; "" for none
	body   []byte  // never sent for HEAD
	length int64   // a HEAD's Content-Length (the blob's); otherwise len(body)
	head   bool

	date, requestID, version, clientRequestID string
}

// field is one response header; key is in canonical form, as net/http
// gives a client the headers it read.
type field struct{ key, value string }

func (a *answer) add(key, value string) { a.hdr = append(a.hdr, field{key, value}) }

// common fills the headers every answer carries.
func (s *Service) common(a *answer, c *call, now time.Time) {
	a.date = s.dateHeader(now)
	a.requestID = s.requestID()
	a.version, a.clientRequestID, a.head = c.version, c.clientRequestID, c.method == http.MethodHead
	if a.version == "" {
		a.version = serviceVersion
	}
}

// serviceVersion answers a request that named no x-ms-version (the
// version azblob v1.8.0 sends).
const serviceVersion = "2026-06-06"

// refusal is the service's error answer for f.
func (s *Service) refusal(c *call, f *failure, now time.Time) *answer {
	a := &answer{status: f.status, code: f.code}
	s.common(a, c, now)
	if f.code == "" || a.head {
		return a // a HEAD answer has no body, a 304 none either
	}
	var b bytes.Buffer
	b.Grow(256)
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><Error><Code>`)
	b.WriteString(f.code)
	b.WriteString("</Code><Message>")
	if m, ok := messages[f.code]; ok {
		b.WriteString(m)
	} else {
		b.WriteString("The service answered " + statusLine(f.status) + ".")
	}
	b.WriteString("\nRequestId:")
	b.WriteString(a.requestID)
	b.WriteString("\nTime:")
	b.WriteString(now.UTC().Format("2006-01-02T15:04:05.0000000Z"))
	b.WriteString("</Message>")
	switch {
	case f.header != "":
		element(&b, "HeaderName", f.header)
		if f.value != "" {
			element(&b, "HeaderValue", f.value)
		}
	case f.query != "":
		element(&b, "QueryParameterName", f.query)
		element(&b, "QueryParameterValue", f.value)
	}
	b.WriteString("</Error>")
	a.body, a.ctype = b.Bytes(), "application/xml"
	return a
}

// element writes <name>text</name>, text escaped.
func element(b *bytes.Buffer, name, text string) {
	b.WriteByte('<')
	b.WriteString(name)
	b.WriteByte('>')
	_ = xml.EscapeText(b, []byte(text)) // a bytes.Buffer never fails
	b.WriteString("</")
	b.WriteString(name)
	b.WriteByte('>')
}

// response is a as a client's transport returns it.
func (a *answer) response(req *http.Request) *http.Response {
	n := len(a.hdr) + 8
	h := make(http.Header, n)
	vals := make([]string, 0, n) // one allocation for every header's value
	set := func(k, v string) {
		vals = append(vals, v)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	a.headers(set)
	var body io.ReadCloser = http.NoBody
	if len(a.body) > 0 && !a.head {
		body = io.NopCloser(bytes.NewReader(a.body))
	}
	return &http.Response{
		Status: statusLine(a.status), StatusCode: a.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: body, ContentLength: a.contentLength(), Request: req,
	}
}

// write sends a as an HTTP server's handler.
func (a *answer) write(w http.ResponseWriter) {
	h := w.Header()
	a.headers(func(k, v string) { h[k] = []string{v} })
	w.WriteHeader(a.status)
	if len(a.body) > 0 && !a.head {
		_, _ = w.Write(a.body) // a client that left gets nothing anyway
	}
}

func (a *answer) contentLength() int64 {
	if a.head {
		return a.length
	}
	return int64(len(a.body))
}

func (a *answer) headers(set func(k, v string)) {
	for _, f := range a.hdr {
		set(f.key, f.value)
	}
	set("Date", a.date)
	set("X-Ms-Request-Id", a.requestID)
	set("X-Ms-Version", a.version)
	set("Server", "Windows-Azure-Blob/1.0 Microsoft-HTTPAPI/2.0")
	set("Content-Length", strconv.FormatInt(a.contentLength(), 10))
	if a.clientRequestID != "" {
		set("X-Ms-Client-Request-Id", a.clientRequestID)
	}
	if a.ctype != "" {
		set("Content-Type", a.ctype)
	}
	if a.code != "" {
		set("X-Ms-Error-Code", a.code)
	}
}

var statusLines = map[int]string{}

func init() {
	for _, code := range []int{200, 201, 202, 304, 400, 403, 404, 405, 408, 409, 412, 429, 500, 501, 502, 503, 504} {
		statusLines[code] = strconv.Itoa(code) + " " + http.StatusText(code)
	}
}

func statusLine(code int) string {
	if s, ok := statusLines[code]; ok {
		return s
	}
	return strconv.Itoa(code) + " " + http.StatusText(code)
}

// dateCache is the Date header of one second.
type dateCache struct {
	sec  int64
	text string
}

// dateHeader is the Date header at now: to the second, as the service
// sends it.
func (s *Service) dateHeader(now time.Time) string {
	sec := now.Unix()
	if d := s.date.Load(); d != nil && d.sec == sec {
		return d.text
	}
	d := &dateCache{sec: sec, text: httpTime(now)}
	s.date.Store(d)
	return d.text
}

// httpTime is t as the service writes times in headers and listings: to
// the second, in GMT.
func httpTime(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// newETag is a new quoted ETag, in the service's shape ("0x8D…", 16 hex
// digits); under mu. A counter, not a time: unique and the same on every
// run of a seed.
func (s *Service) newETag() string {
	s.etags++
	var b [20]byte
	copy(b[:], `"0x8D`)
	hexDigits(b[5:18], s.etags, upperHex)
	b[18] = '"'
	return string(b[:19])
}

// requestID is a new x-ms-request-id, shaped as a GUID.
func (s *Service) requestID() string {
	var b [36]byte
	copy(b[:], "b10b5100-0000-4000-8000-")
	hexDigits(b[24:36], s.requestIDs.Add(1), lowerHex)
	return string(b[:])
}

const (
	upperHex = "0123456789ABCDEF"
	lowerHex = "0123456789abcdef"
)

// hexDigits writes n in hex into b, right-aligned, zero-padded.
func hexDigits(b []byte, n uint64, digits string) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = digits[n&0xF]
		n >>= 4
	}
}
