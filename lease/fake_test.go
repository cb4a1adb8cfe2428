package lease

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	azlease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/hashicorp/go-hclog"
)

// Operation names counted by fakeStore.
const (
	opAcquire   = "acquire"
	opRenew     = "renew"
	opRelease   = "release"
	opBreak     = "break"
	opGetProps  = "getprops"
	opSetMeta   = "setmeta"
	opUpload    = "upload"
	opContainer = "createcontainer"
)

// fakeStore is an in-memory blob with Azure's lease rules, timed by
// time.Now (the fake clock inside a synctest bubble). Dates are truncated to
// the second like the HTTP Date header. Tests inject faults with hook and
// restrict the operations with allow; any other call fails the test.
type fakeStore struct {
	t *testing.T

	mu              sync.Mutex
	containerExists bool
	blobExists      bool
	content         string
	meta            map[string]string // as stored (case kept)
	leaseID         string
	state           State // StateAvailable, StateLeased, StateBreaking, StateBroken (expiry computed)
	expiry          time.Time
	duration        time.Duration
	calls           map[string]int
	allow           map[string]bool // nil: everything allowed
	// hook runs before each operation, outside the lock; a non-nil error
	// is returned instead of doing the operation. It may block.
	hook func(ctx context.Context, op string) error
}

func newFakeStore(t *testing.T) *fakeStore {
	return &fakeStore{t: t, containerExists: true, blobExists: true, meta: map[string]string{},
		state: StateAvailable, calls: map[string]int{}}
}

func (s *fakeStore) client() *Client {
	return &Client{
		url: "https://acct.blob.core.windows.net/c/lock", container: "c", blobName: "lock",
		blob: fakeBlob{s}, cont: fakeContainer{s}, log: hclog.NewNullLogger(),
		newLeaser: func(id string) (leaser, error) { return &fakeLeaser{s: s, id: id}, nil },
	}
}

func (s *fakeStore) setHook(h func(ctx context.Context, op string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

func (s *fakeStore) setAllow(ops ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allow = map[string]bool{}
	for _, op := range ops {
		s.allow[op] = true
	}
}

func (s *fakeStore) count(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// enter counts op, checks it is allowed, and runs the hook.
func (s *fakeStore) enter(ctx context.Context, op string) error {
	s.mu.Lock()
	s.calls[op]++
	allowed := s.allow == nil || s.allow[op]
	hook := s.hook
	s.mu.Unlock()
	if !allowed {
		s.t.Errorf("unexpected %s call", op)
		return respErr(http.StatusTeapot, "UnexpectedCall")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if hook != nil {
		if err := hook(ctx, op); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func respErr(status int, code string) error {
	return &azcore.ResponseError{StatusCode: status, ErrorCode: code}
}

func (s *fakeStore) now() *time.Time {
	d := time.Now().UTC().Truncate(time.Second)
	return &d
}

// stateLocked is the lease state now.
func (s *fakeStore) stateLocked() State {
	now := time.Now()
	switch {
	case s.state == StateLeased && !now.Before(s.expiry):
		return StateExpired
	case s.state == StateBreaking && !now.Before(s.expiry):
		return StateBroken
	}
	return s.state
}

func (s *fakeStore) missingLocked() error {
	switch {
	case !s.containerExists:
		return respErr(http.StatusNotFound, "ContainerNotFound")
	case !s.blobExists:
		return respErr(http.StatusNotFound, "BlobNotFound")
	}
	return nil
}

// holdBy makes someone else hold the lease until expiry, as recorded in md.
func (s *fakeStore) holdBy(id string, d time.Duration, md map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaseID, s.state, s.expiry, s.duration = id, StateLeased, time.Now().Add(d), d
	for k, v := range md {
		s.meta[k] = v
	}
}

// releaseBy releases someone else's lease.
func (s *fakeStore) releaseBy() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaseID, s.state = "", StateAvailable
}

func (s *fakeStore) metadata() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.meta {
		out[strings.ToLower(k)] = v
	}
	return out
}

func (s *fakeStore) leaseState() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateLocked()
}

type fakeLeaser struct {
	s  *fakeStore
	id string
}

func (l *fakeLeaser) AcquireLease(ctx context.Context, duration int32, _ *azlease.BlobAcquireOptions) (azlease.BlobAcquireResponse, error) {
	s := l.s
	if err := s.enter(ctx, opAcquire); err != nil {
		return azlease.BlobAcquireResponse{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return azlease.BlobAcquireResponse{}, err
	}
	if duration < 15 || duration > 60 {
		return azlease.BlobAcquireResponse{}, respErr(http.StatusBadRequest, "InvalidHeaderValue")
	}
	switch st := s.stateLocked(); {
	case st == StateLeased && s.leaseID != l.id:
		return azlease.BlobAcquireResponse{}, respErr(http.StatusConflict, "LeaseAlreadyPresent")
	case st == StateBreaking && s.leaseID == l.id:
		return azlease.BlobAcquireResponse{}, respErr(http.StatusConflict, "LeaseIsBreakingAndCannotBeAcquired")
	case st == StateBreaking:
		return azlease.BlobAcquireResponse{}, respErr(http.StatusConflict, "LeaseAlreadyPresent")
	}
	s.leaseID, s.state = l.id, StateLeased
	s.duration = time.Duration(duration) * time.Second
	s.expiry = time.Now().Add(s.duration)
	return azlease.BlobAcquireResponse{Date: s.now(), LeaseID: &l.id}, nil
}

func (l *fakeLeaser) RenewLease(ctx context.Context, _ *azlease.BlobRenewOptions) (azlease.BlobRenewResponse, error) {
	s := l.s
	if err := s.enter(ctx, opRenew); err != nil {
		return azlease.BlobRenewResponse{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return azlease.BlobRenewResponse{}, err
	}
	switch st := s.stateLocked(); {
	case s.leaseID != l.id || st == StateAvailable:
		return azlease.BlobRenewResponse{}, respErr(http.StatusConflict, "LeaseIdMismatchWithLeaseOperation")
	case st == StateBreaking || st == StateBroken:
		return azlease.BlobRenewResponse{}, respErr(http.StatusConflict, "LeaseIsBrokenAndCannotBeRenewed")
	}
	s.state, s.expiry = StateLeased, time.Now().Add(s.duration)
	return azlease.BlobRenewResponse{Date: s.now(), LeaseID: &l.id}, nil
}

func (l *fakeLeaser) ReleaseLease(ctx context.Context, _ *azlease.BlobReleaseOptions) (azlease.BlobReleaseResponse, error) {
	s := l.s
	if err := s.enter(ctx, opRelease); err != nil {
		return azlease.BlobReleaseResponse{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return azlease.BlobReleaseResponse{}, err
	}
	if s.leaseID != l.id || s.state == StateAvailable {
		return azlease.BlobReleaseResponse{}, respErr(http.StatusConflict, "LeaseIdMismatchWithLeaseOperation")
	}
	s.leaseID, s.state = "", StateAvailable
	return azlease.BlobReleaseResponse{Date: s.now()}, nil
}

func (l *fakeLeaser) BreakLease(ctx context.Context, o *azlease.BlobBreakOptions) (azlease.BlobBreakResponse, error) {
	s := l.s
	if err := s.enter(ctx, opBreak); err != nil {
		return azlease.BlobBreakResponse{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return azlease.BlobBreakResponse{}, err
	}
	st := s.stateLocked()
	if st != StateLeased && st != StateBreaking {
		return azlease.BlobBreakResponse{}, respErr(http.StatusConflict, "LeaseNotPresentWithLeaseOperation")
	}
	if st == StateLeased {
		at := time.Now().Add(time.Duration(*o.BreakPeriod) * time.Second)
		s.state, s.expiry = StateBreaking, minTime(at, s.expiry)
	}
	left := int32(time.Until(s.expiry).Round(time.Second) / time.Second)
	return azlease.BlobBreakResponse{Date: s.now(), LeaseTime: &left}, nil
}

type fakeBlob struct{ s *fakeStore }

func (b fakeBlob) GetProperties(ctx context.Context, _ *blob.GetPropertiesOptions) (blob.GetPropertiesResponse, error) {
	s := b.s
	if err := s.enter(ctx, opGetProps); err != nil {
		return blob.GetPropertiesResponse{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return blob.GetPropertiesResponse{}, err
	}
	md := map[string]*string{}
	for k, v := range s.meta {
		// The SDK hands back canonicalized header casing ("Holder").
		md[http.CanonicalHeaderKey(k)] = &v
	}
	st := azlease.StateType(s.stateLocked())
	return blob.GetPropertiesResponse{Date: s.now(), Metadata: md, LeaseState: &st}, nil
}

func (b fakeBlob) SetMetadata(ctx context.Context, md map[string]*string, o *blob.SetMetadataOptions) (blob.SetMetadataResponse, error) {
	s := b.s
	if err := s.enter(ctx, opSetMeta); err != nil {
		return blob.SetMetadataResponse{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return blob.SetMetadataResponse{}, err
	}
	var id string
	if o != nil && o.AccessConditions != nil && o.AccessConditions.LeaseAccessConditions != nil &&
		o.AccessConditions.LeaseAccessConditions.LeaseID != nil {
		id = *o.AccessConditions.LeaseAccessConditions.LeaseID
	}
	switch st := s.stateLocked(); {
	case st == StateLeased && id == "":
		return blob.SetMetadataResponse{}, respErr(http.StatusPreconditionFailed, "LeaseIdMissing")
	case st == StateLeased && id != s.leaseID:
		return blob.SetMetadataResponse{}, respErr(http.StatusPreconditionFailed, "LeaseIdMismatchWithBlobOperation")
	case st != StateLeased && id != "":
		return blob.SetMetadataResponse{}, respErr(http.StatusPreconditionFailed, "LeaseNotPresentWithBlobOperation")
	}
	seen := map[string]bool{}
	s.meta = map[string]string{}
	for k, v := range md {
		if seen[strings.ToLower(k)] {
			return blob.SetMetadataResponse{}, respErr(http.StatusBadRequest, "DuplicateMetadataKey")
		}
		seen[strings.ToLower(k)] = true
		s.meta[k] = *v
	}
	return blob.SetMetadataResponse{Date: s.now()}, nil
}

func (b fakeBlob) Upload(ctx context.Context, body io.ReadSeekCloser, o *blockblob.UploadOptions) (blockblob.UploadResponse, error) {
	s := b.s
	if err := s.enter(ctx, opUpload); err != nil {
		return blockblob.UploadResponse{}, err
	}
	if o == nil || o.AccessConditions == nil || o.AccessConditions.ModifiedAccessConditions == nil ||
		o.AccessConditions.ModifiedAccessConditions.IfNoneMatch == nil ||
		*o.AccessConditions.ModifiedAccessConditions.IfNoneMatch != azcore.ETagAny {
		s.t.Errorf("upload without If-None-Match: *")
	}
	data, _ := io.ReadAll(body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.containerExists {
		return blockblob.UploadResponse{}, respErr(http.StatusNotFound, "ContainerNotFound")
	}
	if s.blobExists {
		return blockblob.UploadResponse{}, respErr(http.StatusConflict, "BlobAlreadyExists")
	}
	s.blobExists, s.content = true, string(data)
	return blockblob.UploadResponse{Date: s.now()}, nil
}

type fakeContainer struct{ s *fakeStore }

func (c fakeContainer) Create(ctx context.Context, _ *container.CreateOptions) (container.CreateResponse, error) {
	s := c.s
	if err := s.enter(ctx, opContainer); err != nil {
		return container.CreateResponse{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.containerExists {
		return container.CreateResponse{}, respErr(http.StatusConflict, "ContainerAlreadyExists")
	}
	s.containerExists = true
	return container.CreateResponse{Date: s.now()}, nil
}

var (
	_ leaser           = (*fakeLeaser)(nil)
	_ blobber          = fakeBlob{}
	_ containerCreator = fakeContainer{}
)
