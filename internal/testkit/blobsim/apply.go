package blobsim

// apply.go: applying one request to the account, by the service's rules,
// in the order the service checks them: the request's own headers (400),
// then the container and the conditions (404, 412), then the blob (404),
// then its lease (409, 412); and what each operation answers.

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// apply applies c, sent by client as its seq-th request of the kind, and
// answers; OnApply's callback is called before it returns.
func (s *Service) apply(c *call, client string, seq int) *answer {
	s.order.Lock()
	defer s.order.Unlock()
	now := time.Now()
	s.mu.Lock()
	a, f := s.do(c, now)
	if f != nil {
		a = s.refusal(c, f, now)
	}
	var ap Applied
	if s.onApply != nil {
		ap = s.applied(c, a, now)
	}
	s.mu.Unlock()
	if s.onApply != nil {
		ap.Client, ap.Seq = client, seq
		s.onApply(ap)
	}
	return a
}

// applied is what OnApply is told of c; under mu.
func (s *Service) applied(c *call, a *answer, now time.Time) Applied {
	ap := Applied{Time: now, Op: c.op, Container: c.container, Blob: c.blob, Status: a.status, Code: a.code,
		LeaseID: c.leaseID, ProposedID: c.proposedID}
	if c.blob == "" {
		return ap
	}
	b := s.blob(c.container, c.blob)
	if b == nil {
		return ap
	}
	b.lease.settle(now)
	ap.Exists, ap.State, ap.ETag, ap.Metadata = true, b.lease.state, b.etag, b.meta
	if b.lease.held() {
		ap.HeldBy, ap.Until = b.lease.id, b.hist.end(b.lease.tenure)
	}
	return ap
}

// do applies c; under mu.
func (s *Service) do(c *call, now time.Time) (*answer, *failure) {
	if f := c.authorized(); f != nil {
		return nil, f
	}
	switch c.op {
	case OpCreateContainer:
		return s.createContainer(c, now)
	case OpGetContainerProperties:
		return s.containerProperties(c, now)
	case OpDeleteContainer:
		return s.deleteContainer(c, now)
	case OpList:
		return s.list(c, now)
	case OpGetAccountInfo:
		a := s.ok(c, now, http.StatusOK)
		a.add("X-Ms-Sku-Name", "Standard_RAGRS")
		a.add("X-Ms-Account-Kind", "StorageV2")
		a.add("X-Ms-Is-Hns-Enabled", "false")
		return a, nil
	case OpPutBlob:
		return s.putBlob(c, now)
	case OpGetProperties:
		return s.getProperties(c, now)
	case OpSetMetadata:
		return s.setMetadata(c, now)
	case OpDeleteBlob:
		return s.deleteBlob(c, now)
	case OpAcquire, OpRenew, OpRelease, OpBreak, OpChange, OpLease:
		return s.leaseBlob(c, now)
	}
	return nil, errNotModelled
}

// authorized checks that the request is for the account and signed for it
// (SharedKey), or carries a bearer token or a SAS. The signature itself
// is not checked, nor a token or SAS.
func (c *call) authorized() *failure {
	switch {
	case c.account == "":
		return errInvalidURI
	case c.badPath:
		return errAuthentication // the key signs for its own account only
	case strings.HasPrefix(c.auth, "SharedKey "+Account+":"), strings.HasPrefix(c.auth, "Bearer "), c.signedQuery:
		return nil
	}
	return errAuthentication
}

// ok is a success answer.
func (s *Service) ok(c *call, now time.Time, status int) *answer {
	a := &answer{status: status, hdr: make([]field, 0, 16)}
	s.common(a, c, now)
	return a
}

func (s *Service) createContainer(c *call, now time.Time) (*answer, *failure) {
	if !validContainerName(c.container) {
		return nil, errInvalidResourceName
	}
	if s.containers[c.container] != nil {
		return nil, errContainerAlreadyExists
	}
	ct := &containerState{name: c.container, etag: s.newETag(), modified: now, blobs: map[string]*blobState{}}
	s.containers[c.container] = ct
	a := s.ok(c, now, http.StatusCreated)
	a.add("Etag", ct.etag)
	a.add("Last-Modified", httpTime(now))
	return a, nil
}

func (s *Service) containerProperties(c *call, now time.Time) (*answer, *failure) {
	ct := s.containers[c.container]
	if ct == nil {
		return nil, errContainerNotFound
	}
	a := s.ok(c, now, http.StatusOK)
	a.add("Etag", ct.etag)
	a.add("Last-Modified", httpTime(ct.modified))
	a.add("X-Ms-Lease-State", string(Available))
	a.add("X-Ms-Lease-Status", Available.Status())
	a.add("X-Ms-Has-Immutability-Policy", "false")
	a.add("X-Ms-Has-Legal-Hold", "false")
	a.add("X-Ms-Default-Encryption-Scope", "$account-encryption-key")
	a.add("X-Ms-Deny-Encryption-Scope-Override", "false")
	return a, nil
}

// deleteContainer deletes the container and its blobs at once (the
// service takes a while, answering 409 ContainerBeingDeleted meanwhile).
func (s *Service) deleteContainer(c *call, now time.Time) (*answer, *failure) {
	ct := s.containers[c.container]
	if ct == nil {
		return nil, errContainerNotFound
	}
	for _, b := range ct.blobs {
		b.ended(now)
	}
	delete(s.containers, c.container)
	return s.ok(c, now, http.StatusAccepted), nil
}

// validContainerName applies Azure's naming rules for containers.
func validContainerName(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch ch := name[i]; {
		case ch >= 'a' && ch <= 'z', ch >= '0' && ch <= '9':
		case ch == '-' && i > 0 && i < len(name)-1 && name[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

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

// leaseBlob is Lease Blob, each action.
func (s *Service) leaseBlob(c *call, now time.Time) (*answer, *failure) {
	lc, f := c.leaseCall()
	if f != nil {
		return nil, f
	}
	b, f := s.existing(c, now, true)
	if f != nil {
		return nil, f
	}
	status, leaseTime := http.StatusOK, -1
	switch c.op {
	case OpAcquire:
		if lc.proposed == "" {
			lc.proposed = s.newLeaseID()
		}
		f, status = b.acquire(now, lc.proposed, lc.seconds), http.StatusCreated
	case OpRenew:
		f = b.renew(now, lc.id)
	case OpChange:
		f = b.change(now, lc.id, lc.proposed)
	case OpRelease:
		f = b.release(now, lc.id)
	case OpBreak:
		leaseTime, f = b.breakLease(now, lc.period)
		status = http.StatusAccepted
	}
	if f != nil {
		return nil, f
	}
	a := s.ok(c, now, status)
	a.add("Etag", b.etag)
	a.add("Last-Modified", httpTime(b.modified))
	switch c.op {
	case OpAcquire, OpRenew, OpChange:
		a.add("X-Ms-Lease-Id", b.lease.id)
	case OpBreak:
		a.add("X-Ms-Lease-Time", strconv.Itoa(leaseTime))
	}
	return a, nil
}

// newLeaseID is the ID the service chooses for an acquire that proposed
// none: a GUID, from a counter.
func (s *Service) newLeaseID() string {
	s.leaseIDs++
	var b [36]byte
	copy(b[:], "5e1ec7ed-0000-4000-8000-")
	hexDigits(b[24:], s.leaseIDs, lowerHex)
	return string(b[:])
}

// leaseCall is a Lease Blob request's headers, checked.
type leaseCall struct {
	id, proposed string // canonical
	seconds      int    // acquire: -1 or 15–60
	period       int    // break: 0–60, -1 none
}

// leaseCall checks the headers each action needs, before anything else
// (the service refuses a malformed request whatever the blob's state).
func (c *call) leaseCall() (leaseCall, *failure) {
	lc := leaseCall{period: -1}
	var f *failure
	if lc.id, f = leaseIDHeader("x-ms-lease-id", c.leaseID); f != nil {
		return lc, f
	}
	if lc.proposed, f = leaseIDHeader("x-ms-proposed-lease-id", c.proposedID); f != nil {
		return lc, f
	}
	switch c.op {
	case OpLease:
		if c.leaseAction == "" {
			return lc, missingHeader("x-ms-lease-action")
		}
		return lc, badHeader("x-ms-lease-action", c.leaseAction)
	case OpAcquire:
		if !c.hasDuration {
			return lc, missingHeader("x-ms-lease-duration")
		}
		n, err := strconv.Atoi(c.duration)
		if err != nil || n != -1 && (n < minLeaseSeconds || n > maxLeaseSeconds) {
			return lc, badHeader("x-ms-lease-duration", c.duration)
		}
		lc.seconds = n
	case OpRenew, OpRelease:
		if lc.id == "" {
			return lc, missingHeader("x-ms-lease-id")
		}
	case OpChange:
		if lc.id == "" {
			return lc, missingHeader("x-ms-lease-id")
		}
		if lc.proposed == "" {
			return lc, missingHeader("x-ms-proposed-lease-id")
		}
	case OpBreak:
		if c.hasBreakPeriod {
			n, err := strconv.Atoi(c.breakPeriod)
			if err != nil || n < 0 || n > maxBreakSeconds {
				return lc, badHeader("x-ms-lease-break-period", c.breakPeriod)
			}
			lc.period = n
		}
	}
	return lc, nil
}
