package blobsim

// request.go: reading a request as the service does: which operation on
// which container and blob (the Op names a simulator's faults key on), and
// the query parameters and headers the model looks at. Header names are
// matched in any case: the SDK sets its x-ms-* headers in lowercase, past
// http.Header's canonical form, while a request read by an HTTP server has
// them canonical.

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Op names, as Request.Op and Applied.Op give them.
const (
	OpCreateContainer        = "createContainer"        // PUT ?restype=container
	OpGetContainerProperties = "getContainerProperties" // GET or HEAD ?restype=container
	OpDeleteContainer        = "deleteContainer"        // DELETE ?restype=container
	OpList                   = "list"                   // GET ?restype=container&comp=list
	OpGetAccountInfo         = "getAccountInfo"         // GET or HEAD ?restype=account&comp=properties
	OpPutBlob                = "putBlob"                // PUT on a blob (a block blob)
	OpGetProperties          = "getProperties"          // HEAD on a blob
	OpSetMetadata            = "setMetadata"            // PUT ?comp=metadata
	OpDeleteBlob             = "deleteBlob"             // DELETE on a blob
	OpAcquire                = "acquire"                // PUT ?comp=lease, x-ms-lease-action: acquire
	OpRenew                  = "renew"
	OpRelease                = "release"
	OpBreak                  = "break"
	OpChange                 = "change"
	OpLease                  = "lease"       // PUT ?comp=lease with no or an unknown action
	OpNotModelled            = "notModelled" // anything else: answered 501 NotImplemented
)

// call is one request as the model reads it.
type call struct {
	op, method         string
	account            string
	container, blob    string
	endpoint           string // scheme://host/account, for a listing's ServiceEndpoint
	badPath            bool   // no account, or another account's
	comp, restype      string
	prefix, marker     string
	startFrom, include string
	maxResults         string
	hasMaxResults      bool
	signedQuery        bool // a SAS: sig= in the query

	auth                               string
	leaseAction, leaseID, proposedID   string
	duration, breakPeriod              string
	hasDuration, hasBreakPeriod        bool
	ifMatch, ifNoneMatch               string
	ifModifiedSince, ifUnmodifiedSince string
	blobType, clientRequestID, version string
	meta                               map[string]string // x-ms-meta-*, names lowercased; nil if none
	length                             int64
}

// parse reads r.
func parse(r *http.Request) *call {
	c := &call{method: r.Method, length: r.ContentLength}
	c.parsePath(r)
	c.parseQuery(r.URL.RawQuery)
	c.parseHeaders(r.Header)
	c.op = c.operation()
	return c
}

// parsePath finds the account, container and blob: path-style
// (host/account/container/blob, Azurite's and a loopback endpoint's) or
// the account in the host name (account.blob.core.windows.net).
func (c *call) parsePath(r *http.Request) {
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	path := strings.TrimPrefix(r.URL.Path, "/")
	scheme := r.URL.Scheme
	if scheme == "" {
		scheme = "http"
	}
	if strings.HasPrefix(host, Account+".") {
		c.account = Account
		c.endpoint = scheme + "://" + host
	} else {
		c.account, path, _ = strings.Cut(path, "/")
		c.endpoint = scheme + "://" + host + "/" + c.account
	}
	c.badPath = c.account != Account
	c.container, c.blob, _ = strings.Cut(path, "/")
}

func (c *call) parseQuery(raw string) {
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(v, "%+") {
			if u, err := url.QueryUnescape(v); err == nil {
				v = u
			}
		}
		switch k {
		case "comp":
			c.comp = v
		case "restype":
			c.restype = v
		case "prefix":
			c.prefix = v
		case "marker":
			c.marker = v
		case "startFrom":
			c.startFrom = v
		case "include":
			c.include = v
		case "maxresults":
			c.maxResults, c.hasMaxResults = v, true
		case "sig":
			c.signedQuery = true
		}
	}
}

const metaPrefix = "x-ms-meta-"

func (c *call) parseHeaders(h http.Header) {
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		v := vs[0]
		k = strings.ToLower(k) // no copy when already lowercase
		if name, ok := strings.CutPrefix(k, metaPrefix); ok {
			if c.meta == nil {
				c.meta = make(map[string]string, len(h))
			}
			c.meta[name] = v
			continue
		}
		switch k {
		case "authorization":
			c.auth = v
		case "x-ms-lease-action":
			c.leaseAction = strings.ToLower(v)
		case "x-ms-lease-id":
			c.leaseID = v
		case "x-ms-proposed-lease-id":
			c.proposedID = v
		case "x-ms-lease-duration":
			c.duration, c.hasDuration = v, true
		case "x-ms-lease-break-period":
			c.breakPeriod, c.hasBreakPeriod = v, true
		case "if-match":
			c.ifMatch = v
		case "if-none-match":
			c.ifNoneMatch = v
		case "if-modified-since":
			c.ifModifiedSince = v
		case "if-unmodified-since":
			c.ifUnmodifiedSince = v
		case "x-ms-blob-type":
			c.blobType = v
		case "x-ms-client-request-id":
			c.clientRequestID = v
		case "x-ms-version":
			c.version = v
		case "content-length":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && c.length < 0 {
				c.length = n
			}
		}
	}
}

// operation names what c asks for.
func (c *call) operation() string {
	m := c.method
	switch {
	case c.restype == "account" && c.comp == "properties" && (m == http.MethodGet || m == http.MethodHead):
		return OpGetAccountInfo
	case c.blob == "" && c.restype == "container" && c.comp == "":
		switch m {
		case http.MethodPut:
			return OpCreateContainer
		case http.MethodGet, http.MethodHead:
			return OpGetContainerProperties
		case http.MethodDelete:
			return OpDeleteContainer
		}
	case c.blob == "" && c.restype == "container" && c.comp == "list" && m == http.MethodGet:
		return OpList
	case c.blob == "" || c.restype != "":
	case c.comp == "":
		switch m {
		case http.MethodPut:
			return OpPutBlob
		case http.MethodHead:
			return OpGetProperties
		case http.MethodDelete:
			return OpDeleteBlob
		}
	case c.comp == "metadata" && m == http.MethodPut:
		return OpSetMetadata
	case c.comp == "lease" && m == http.MethodPut:
		switch c.leaseAction {
		case "acquire":
			return OpAcquire
		case "renew":
			return OpRenew
		case "release":
			return OpRelease
		case "break":
			return OpBreak
		case "change":
			return OpChange
		}
		return OpLease
	}
	return OpNotModelled
}
