package blobsim

// apply.go: applying one request to the account, by the service's rules,
// in the order the service checks them: the request's own headers (400),
// then the container and the conditions (404, 412), then the blob (404),
// then its lease (409, 412); telling OnApply; and the requests on the
// account and its containers. blobs.go and leaseblob.go have the
// requests on a blob.

import (
	"net/http"
	"strings"
	"time"
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
