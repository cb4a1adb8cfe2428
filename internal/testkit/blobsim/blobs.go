package blobsim

// blobs.go: the requests on a blob's content and metadata: Put Blob, Get
// Blob Properties, Set Blob Metadata, Delete Blob; the rules on metadata,
// the conditional headers, and the lease ID headers every blob request
// may carry.

import (
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
)

// maxMetadata is the most metadata a blob may have, names and values.
const maxMetadata = 8 << 10

// checkMetadata applies the service's rules: names are C# identifiers, and
// all names and values together at most 8 KiB. Azurite checks neither.
func checkMetadata(md map[string]string) *failure {
	size := 0
	for k, v := range md {
		switch {
		case k == "":
			return errEmptyMetadataKey
		case !validMetadataName(k):
			return errInvalidMetadata
		}
		size += len(k) + len(v)
	}
	if size > maxMetadata {
		return errMetadataTooLarge
	}
	return nil
}

func validMetadataName(k string) bool {
	for i := 0; i < len(k); i++ {
		switch ch := k[i]; {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch == '_':
		case ch >= '0' && ch <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// leaseIDHeader reads a lease ID header: any GUID format, compared by
// value. The service refuses one that is not a GUID; Azurite takes any
// string.
func leaseIDHeader(name, value string) (string, *failure) {
	if value == "" {
		return "", nil
	}
	u, err := uuid.Parse(value)
	if err != nil {
		return "", badHeader(name, value)
	}
	return u.String(), nil
}

// writeConditions checks a write's conditional headers on b (nil: no
// blob). If-None-Match: * passes here; Put Blob refuses it on a blob that
// exists (409), other writes ignore it, as Azurite does.
func (c *call) writeConditions(b *blobState) *failure {
	if b == nil {
		if c.ifMatch != "" {
			return errConditionNotMet
		}
		return nil
	}
	switch {
	case c.ifNoneMatch != "":
		if c.ifNoneMatch != "*" && sameETag(c.ifNoneMatch, b.etag) {
			return errConditionNotMet
		}
	case c.ifMatch != "":
		if c.ifMatch != "*" && !sameETag(c.ifMatch, b.etag) {
			return errConditionNotMet
		}
	case c.ifModifiedSince != "":
		if t, err := http.ParseTime(c.ifModifiedSince); err == nil && !modifiedSince(b, t) {
			return errConditionNotMet
		}
	case c.ifUnmodifiedSince != "":
		if t, err := http.ParseTime(c.ifUnmodifiedSince); err == nil && modifiedSince(b, t) {
			return errConditionNotMet
		}
	}
	return nil
}

// readConditions checks a read's: a match of If-None-Match, or no change
// since If-Modified-Since, is 304 Not Modified.
func (c *call) readConditions(b *blobState) *failure {
	switch {
	case c.ifMatch != "":
		if c.ifMatch != "*" && !sameETag(c.ifMatch, b.etag) {
			return errConditionNotMet
		}
	case c.ifNoneMatch != "":
		if c.ifNoneMatch == "*" || sameETag(c.ifNoneMatch, b.etag) {
			return errNotModified
		}
	case c.ifModifiedSince != "":
		if t, err := http.ParseTime(c.ifModifiedSince); err == nil && !modifiedSince(b, t) {
			return errNotModified
		}
	case c.ifUnmodifiedSince != "":
		if t, err := http.ParseTime(c.ifUnmodifiedSince); err == nil && modifiedSince(b, t) {
			return errConditionNotMet
		}
	}
	return nil
}

// modifiedSince compares at the second, the resolution of the headers.
func modifiedSince(b *blobState, t time.Time) bool { return b.modified.Truncate(time.Second).After(t) }

// sameETag compares ETags, quoted or not.
func sameETag(a, b string) bool { return bareETag(a) == bareETag(b) }

func bareETag(e string) string {
	e = strings.TrimPrefix(e, "W/")
	return strings.Trim(e, `"`)
}

func (s *Service) putBlob(c *call, now time.Time) (*answer, *failure) {
	switch {
	case c.blobType == "":
		return nil, missingHeader("x-ms-blob-type")
	case c.blobType != "BlockBlob":
		return nil, errNotModelled // page and append blobs
	case len(c.blob) > 1024:
		return nil, errInvalidResourceName
	}
	if f := checkMetadata(c.meta); f != nil {
		return nil, f
	}
	id, f := leaseIDHeader("x-ms-lease-id", c.leaseID)
	if f != nil {
		return nil, f
	}
	ct := s.containers[c.container]
	if ct == nil {
		return nil, errContainerNotFound
	}
	b := ct.blobs[c.blob]
	if f := c.writeConditions(b); f != nil {
		return nil, f
	}
	if b != nil && c.ifNoneMatch == "*" {
		return nil, errBlobAlreadyExists
	}
	if b == nil {
		b = &blobState{name: c.blob, lease: availableLease(), hist: s.history(c.container, c.blob)}
		ct.insert(b)
	} else {
		if f := b.writable(now, id); f != nil {
			return nil, f
		}
		b.written() // a lease held is kept, with its ID
	}
	b.created = now // a blob written over is a new one: its creation time tells (Azurite agrees)
	s.write(b, c.meta, now)
	b.length = max(c.length, 0)
	a := s.ok(c, now, http.StatusCreated)
	a.add("Etag", b.etag)
	a.add("Last-Modified", httpTime(now))
	a.add("X-Ms-Request-Server-Encrypted", "true")
	return a, nil
}

// write gives b new metadata and a new ETag.
func (s *Service) write(b *blobState, md map[string]string, now time.Time) {
	if md == nil {
		md = map[string]string{}
	}
	b.meta, b.etag, b.modified = md, s.newETag(), now
}

// existing finds the blob a blob request is about, checking its
// container, the write conditions (when write) and that it exists, and
// brings its lease to now.
func (s *Service) existing(c *call, now time.Time, write bool) (*blobState, *failure) {
	ct := s.containers[c.container]
	if ct == nil {
		return nil, errContainerNotFound
	}
	b := ct.blobs[c.blob]
	if write {
		if f := c.writeConditions(b); f != nil {
			return nil, f
		}
	}
	if b == nil {
		return nil, errBlobNotFound
	}
	b.lease.settle(now)
	return b, nil
}

func (s *Service) getProperties(c *call, now time.Time) (*answer, *failure) {
	id, f := leaseIDHeader("x-ms-lease-id", c.leaseID)
	if f != nil {
		return nil, f
	}
	b, f := s.existing(c, now, false)
	if f != nil {
		return nil, f
	}
	if f := c.readConditions(b); f != nil {
		return nil, f
	}
	if f := b.readable(now, id); f != nil {
		return nil, f
	}
	a := s.ok(c, now, http.StatusOK)
	a.hdr = append(a.hdr,
		field{"Etag", b.etag},
		field{"Last-Modified", httpTime(b.modified)},
		field{"X-Ms-Creation-Time", httpTime(b.created)},
		field{"X-Ms-Blob-Type", "BlockBlob"},
		field{"Content-Type", "application/octet-stream"},
		field{"Accept-Ranges", "bytes"},
		field{"X-Ms-Server-Encrypted", "true"},
		field{"X-Ms-Access-Tier", "Hot"},
		field{"X-Ms-Access-Tier-Inferred", "true"},
		field{"X-Ms-Lease-State", string(b.lease.state)},
		field{"X-Ms-Lease-Status", b.lease.state.Status()},
	)
	if b.lease.state == Leased {
		a.add("X-Ms-Lease-Duration", durationType(b.lease.seconds))
	}
	for k, v := range b.meta {
		a.add(s.metaKey(k), v)
	}
	a.length = b.length
	return a, nil
}

// metaKey is the response header of a metadata name, in canonical form
// ("X-Ms-Meta-Holder": the SDK then gives the name capitalised, as it
// does from the service).
func (s *Service) metaKey(name string) string {
	if k, ok := s.metaKeys.Load(name); ok {
		return k.(string)
	}
	k := http.CanonicalHeaderKey(metaPrefix + name)
	s.metaKeys.Store(name, k)
	return k
}

func durationType(seconds int) string {
	if seconds < 0 {
		return "infinite"
	}
	return "fixed"
}

func (s *Service) setMetadata(c *call, now time.Time) (*answer, *failure) {
	if f := checkMetadata(c.meta); f != nil {
		return nil, f
	}
	id, f := leaseIDHeader("x-ms-lease-id", c.leaseID)
	if f != nil {
		return nil, f
	}
	b, f := s.existing(c, now, true)
	if f != nil {
		return nil, f
	}
	if f := b.writable(now, id); f != nil {
		return nil, f
	}
	b.written()
	s.write(b, c.meta, now)
	a := s.ok(c, now, http.StatusOK)
	a.add("Etag", b.etag)
	a.add("Last-Modified", httpTime(now))
	a.add("X-Ms-Request-Server-Encrypted", "true")
	return a, nil
}

func (s *Service) deleteBlob(c *call, now time.Time) (*answer, *failure) {
	id, f := leaseIDHeader("x-ms-lease-id", c.leaseID)
	if f != nil {
		return nil, f
	}
	b, f := s.existing(c, now, true)
	if f != nil {
		return nil, f
	}
	if f := b.writable(now, id); f != nil {
		return nil, f
	}
	b.ended(now)
	s.containers[c.container].remove(c.blob)
	return s.ok(c, now, http.StatusAccepted), nil
}
