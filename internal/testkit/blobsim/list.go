package blobsim

// list.go: List Blobs, flat: the blobs under a prefix in name order, up to
// 5,000 a page, each with its lease state and (include=metadata) its
// metadata, continued by an opaque NextMarker, and startFrom (the names
// from one on, inclusive), as the service answers it in XML.

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxPage is the most blobs one page lists.
const maxPage = 5000

// markerPrefix begins the model's markers: opaque to clients, as the
// service's are, so that none relies on a marker being a blob name.
const markerPrefix = "bsm!"

func encodeMarker(last string) string {
	return markerPrefix + base64.RawURLEncoding.EncodeToString([]byte(last))
}

func decodeMarker(m string) (string, bool) {
	rest, ok := strings.CutPrefix(m, markerPrefix)
	if !ok {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	return string(b), err == nil
}

// includes the service knows; only metadata shows anything in the model
// (no snapshots, versions, deleted blobs, tags or uncommitted blobs).
var includes = map[string]bool{"metadata": true, "snapshots": true, "uncommittedblobs": true, "copy": true,
	"deleted": true, "tags": true, "versions": true, "deletedwithversions": true, "immutabilitypolicy": true,
	"legalhold": true, "permissions": true}

func (s *Service) list(c *call, now time.Time) (*answer, *failure) {
	ct := s.containers[c.container]
	if ct == nil {
		return nil, errContainerNotFound
	}
	limit := maxPage
	if c.hasMaxResults {
		n, err := strconv.Atoi(c.maxResults)
		switch {
		case err != nil:
			return nil, badQuery("InvalidQueryParameterValue", "maxresults", c.maxResults)
		case n <= 0:
			return nil, badQuery("OutOfRangeQueryParameterValue", "maxresults", c.maxResults)
		}
		limit = min(n, maxPage)
	}
	withMeta := false
	for inc := range strings.SplitSeq(c.include, ",") {
		inc = strings.ToLower(strings.TrimSpace(inc))
		if inc != "" && !includes[inc] {
			return nil, badQuery("InvalidQueryParameterValue", "include", c.include)
		}
		withMeta = withMeta || inc == "metadata"
	}
	names := ct.names
	start := sort.SearchStrings(names, c.prefix)
	if c.marker != "" {
		after, ok := decodeMarker(c.marker)
		if !ok {
			return nil, badQuery("InvalidQueryParameterValue", "marker", c.marker)
		}
		start = max(start, sort.Search(len(names), func(i int) bool { return names[i] > after }))
	}
	if c.startFrom != "" {
		start = max(start, sort.SearchStrings(names, c.startFrom))
	}

	var b bytes.Buffer
	b.Grow(512)
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="`)
	escapeAttr(&b, c.endpoint+"/")
	b.WriteString(`" ContainerName="`)
	escapeAttr(&b, c.container)
	b.WriteString(`">`)
	if c.prefix != "" {
		element(&b, "Prefix", c.prefix)
	}
	if c.marker != "" {
		element(&b, "Marker", c.marker)
	}
	if c.hasMaxResults {
		element(&b, "MaxResults", strconv.Itoa(limit))
	}
	b.WriteString("<Blobs>")
	next, n := "", 0
	for _, name := range names[start:] {
		if !strings.HasPrefix(name, c.prefix) {
			break
		}
		if n == limit {
			next = encodeMarker(names[start+n-1])
			break
		}
		s.listed(&b, ct.blobs[name], withMeta, now)
		n++
	}
	b.WriteString("</Blobs>")
	if next == "" {
		b.WriteString("<NextMarker />")
	} else {
		element(&b, "NextMarker", next)
	}
	b.WriteString("</EnumerationResults>")
	a := s.ok(c, now, http.StatusOK)
	a.body, a.ctype = b.Bytes(), "application/xml"
	return a, nil
}

// listed writes one blob of a listing. Its ETag is bare, as the service
// lists it (a header quotes it).
func (s *Service) listed(b *bytes.Buffer, bl *blobState, withMeta bool, now time.Time) {
	bl.lease.settle(now)
	b.WriteString("<Blob>")
	element(b, "Name", bl.name)
	b.WriteString("<Properties>")
	element(b, "Creation-Time", httpTime(bl.created))
	element(b, "Last-Modified", httpTime(bl.modified))
	element(b, "Etag", bareETag(bl.etag))
	element(b, "Content-Length", strconv.FormatInt(bl.length, 10))
	b.WriteString("<Content-Type>application/octet-stream</Content-Type><BlobType>BlockBlob</BlobType>" +
		"<AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred>")
	element(b, "LeaseStatus", bl.lease.state.Status())
	element(b, "LeaseState", string(bl.lease.state))
	if bl.lease.state == Leased {
		element(b, "LeaseDuration", durationType(bl.lease.seconds))
	}
	b.WriteString("<ServerEncrypted>true</ServerEncrypted></Properties>")
	if withMeta {
		if len(bl.meta) == 0 {
			b.WriteString("<Metadata />")
		} else {
			b.WriteString("<Metadata>")
			keys := make([]string, 0, len(bl.meta))
			for k := range bl.meta {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				element(b, k, bl.meta[k])
			}
			b.WriteString("</Metadata>")
		}
	}
	b.WriteString("</Blob>")
}

// escapeAttr writes text escaped for an attribute value in double quotes
// (EscapeText escapes quotes too).
func escapeAttr(b *bytes.Buffer, text string) {
	_ = xml.EscapeText(b, []byte(text)) // a bytes.Buffer never fails
}
