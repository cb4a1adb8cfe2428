package lease

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
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
	opPut       = "put"
	opDelete    = "delete"
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
	// etag counts the blob's versions: every metadata write and the
	// blob's creation bump it; with etagOnAcquire an acquire does too
	// (Azure does not document whether it does).
	etag          int
	etagOnAcquire bool
	ifMatches     []string // the If-Match of every metadata write, "" for none
	calls         map[string]int
	allow         map[string]bool // nil: everything allowed
	// hook runs before each operation, outside the lock; a non-nil error
	// is returned instead of doing the operation. It may block.
	hook func(ctx context.Context, op string) error
	// lose[op] > 0: the next lose[op] calls of op are applied, and then
	// answered 500 OperationTimedOut, as the service may do.
	lose map[string]int
}

// loseAnswers makes the next n calls of op land unanswered.
func (s *fakeStore) loseAnswers(op string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lose == nil {
		s.lose = map[string]int{}
	}
	s.lose[op] = n
}

// answerOrLoseLocked is ans, or a lost answer if op is to lose one.
func (s *fakeStore) answerOrLoseLocked(op string, ans answer) (answer, error) {
	if s.lose[op] > 0 {
		s.lose[op]--
		return answer{}, respErr(http.StatusInternalServerError, "OperationTimedOut")
	}
	return ans, nil
}

func newFakeStore(t *testing.T) *fakeStore {
	return &fakeStore{t: t, containerExists: true, blobExists: true, meta: map[string]string{},
		state: StateAvailable, etag: 1, calls: map[string]int{}}
}

// client is the fake's blob "lock" of the container "c". Its requests are
// mapped as the storage edge maps them (fakeAPI.mapped).
func (s *fakeStore) client() *Blob {
	c := &Container{name: "c", url: "https://acct.blob.core.windows.net/c", log: hclog.NewNullLogger()}
	return &Blob{c: c, name: "lock", url: c.BlobURL("lock"), api: fakeAPI{s, c}}
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
	if len(md) > 0 {
		s.etag++
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

// fakeAPI is the blobAPI of a fakeStore. It maps its failures as the
// storage edge does, so that what comes out of it is what comes out of
// azBlob.
type fakeAPI struct {
	s *fakeStore
	c *Container
}

// mapped maps *err as azBlob does (Container.fail).
func (f fakeAPI) mapped(op string, err *error) { *err = f.c.fail(op, *err) }

var _ blobAPI = fakeAPI{}

func (s *fakeStore) answerLocked() answer {
	return answer{Date: *s.now(), ETag: s.etagLocked(), LeaseTime: -1}
}

func (s *fakeStore) etagLocked() string { return fmt.Sprintf("\"0x%X\"", s.etag) }

func (f fakeAPI) acquireLease(ctx context.Context, id string, seconds int) (_ answer, err error) {
	defer f.mapped("acquire", &err)
	s := f.s
	if err := s.enter(ctx, opAcquire); err != nil {
		return answer{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return answer{}, err
	}
	if seconds < 15 || seconds > 60 {
		return answer{}, respErr(http.StatusBadRequest, "InvalidHeaderValue")
	}
	switch st := s.stateLocked(); {
	case st == StateLeased && s.leaseID != id:
		return answer{}, respErr(http.StatusConflict, "LeaseAlreadyPresent")
	case st == StateBreaking && s.leaseID == id:
		return answer{}, respErr(http.StatusConflict, "LeaseIsBreakingAndCannotBeAcquired")
	case st == StateBreaking:
		return answer{}, respErr(http.StatusConflict, "LeaseAlreadyPresent")
	}
	s.leaseID, s.state = id, StateLeased
	s.duration = time.Duration(seconds) * time.Second
	s.expiry = time.Now().Add(s.duration)
	if s.etagOnAcquire {
		s.etag++
	}
	return s.answerOrLoseLocked(opAcquire, s.answerLocked())
}

func (f fakeAPI) renewLease(ctx context.Context, id string) (_ answer, err error) {
	defer f.mapped("renew", &err)
	s := f.s
	if err := s.enter(ctx, opRenew); err != nil {
		return answer{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return answer{}, err
	}
	switch st := s.stateLocked(); {
	case s.leaseID != id || st == StateAvailable:
		return answer{}, respErr(http.StatusConflict, "LeaseIdMismatchWithLeaseOperation")
	case st == StateBreaking || st == StateBroken:
		return answer{}, respErr(http.StatusConflict, "LeaseIsBrokenAndCannotBeRenewed")
	}
	s.state, s.expiry = StateLeased, time.Now().Add(s.duration)
	return s.answerLocked(), nil
}

func (f fakeAPI) releaseLease(ctx context.Context, id string) (_ answer, err error) {
	defer f.mapped("release", &err)
	s := f.s
	if err := s.enter(ctx, opRelease); err != nil {
		return answer{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return answer{}, err
	}
	if s.leaseID != id || s.state == StateAvailable {
		return answer{}, respErr(http.StatusConflict, "LeaseIdMismatchWithLeaseOperation")
	}
	s.leaseID, s.state = "", StateAvailable
	return s.answerLocked(), nil
}

func (f fakeAPI) breakLease(ctx context.Context, period int) (_ answer, err error) {
	defer f.mapped("break", &err)
	s := f.s
	if err := s.enter(ctx, opBreak); err != nil {
		return answer{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return answer{}, err
	}
	st := s.stateLocked()
	if st != StateLeased && st != StateBreaking {
		return answer{}, respErr(http.StatusConflict, "LeaseNotPresentWithLeaseOperation")
	}
	if st == StateLeased {
		at := s.expiry // no period: when the current one ends
		if period >= 0 {
			at = minTime(time.Now().Add(time.Duration(period)*time.Second), s.expiry)
		}
		s.state, s.expiry = StateBreaking, at
	}
	a := s.answerLocked()
	a.LeaseTime = int(time.Until(s.expiry).Round(time.Second) / time.Second)
	return a, nil
}

func (f fakeAPI) getProperties(ctx context.Context) (_ blobProps, err error) {
	defer f.mapped("get properties", &err)
	s := f.s
	if err := s.enter(ctx, opGetProps); err != nil {
		return blobProps{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return blobProps{}, err
	}
	md := map[string]string{}
	for k, v := range s.meta {
		md[strings.ToLower(k)] = v
	}
	return blobProps{answer: s.answerLocked(), LeaseState: string(s.stateLocked()), Metadata: md}, nil
}

func (f fakeAPI) setMetadata(ctx context.Context, id, ifMatch string, md map[string]string) (_ answer, err error) {
	defer f.mapped("set metadata", &err)
	s := f.s
	if err := s.enter(ctx, opSetMeta); err != nil {
		return answer{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ifMatches = append(s.ifMatches, ifMatch)
	if err := s.missingLocked(); err != nil {
		return answer{}, err
	}
	switch st := s.stateLocked(); {
	case st == StateLeased && id == "":
		return answer{}, respErr(http.StatusPreconditionFailed, "LeaseIdMissing")
	case st == StateLeased && id != s.leaseID:
		return answer{}, respErr(http.StatusPreconditionFailed, "LeaseIdMismatchWithBlobOperation")
	case st != StateLeased && id != "":
		return answer{}, respErr(http.StatusPreconditionFailed, "LeaseNotPresentWithBlobOperation")
	}
	if ifMatch != "" && ifMatch != s.etagLocked() {
		return answer{}, respErr(http.StatusPreconditionFailed, "ConditionNotMet")
	}
	seen := map[string]bool{}
	s.meta = map[string]string{}
	for k, v := range md {
		if seen[strings.ToLower(k)] {
			return answer{}, respErr(http.StatusBadRequest, "DuplicateMetadataKey")
		}
		seen[strings.ToLower(k)] = true
		s.meta[k] = v
	}
	s.etag++
	return s.answerOrLoseLocked(opSetMeta, s.answerLocked())
}

func (f fakeAPI) createBlob(ctx context.Context) (_ answer, err error) {
	defer f.mapped("create blob", &err)
	s := f.s
	if err := s.enter(ctx, opUpload); err != nil {
		return answer{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.containerExists {
		return answer{}, respErr(http.StatusNotFound, "ContainerNotFound")
	}
	if s.blobExists {
		return answer{}, respErr(http.StatusConflict, "BlobAlreadyExists")
	}
	s.blobExists, s.content = true, ""
	s.etag++
	return s.answerLocked(), nil
}

func (f fakeAPI) createContainer(ctx context.Context) (_ answer, err error) {
	defer f.mapped("create container", &err)
	s := f.s
	if err := s.enter(ctx, opContainer); err != nil {
		return answer{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.containerExists {
		return answer{}, respErr(http.StatusConflict, "ContainerAlreadyExists")
	}
	s.containerExists = true
	return answer{Date: *s.now(), ETag: `"0xC0"`, LeaseTime: -1}, nil
}

func (f fakeAPI) putBlob(ctx context.Context, md map[string]string) (_ answer, err error) {
	defer f.mapped("put blob", &err)
	s := f.s
	if err := s.enter(ctx, opPut); err != nil {
		return answer{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.containerExists {
		return answer{}, respErr(http.StatusNotFound, "ContainerNotFound")
	}
	if s.blobExists && s.stateLocked() == StateLeased {
		return answer{}, respErr(http.StatusPreconditionFailed, "LeaseIdMissing")
	}
	s.blobExists, s.content, s.meta = true, "", map[string]string{}
	for k, v := range md {
		s.meta[k] = v
	}
	s.etag++
	return s.answerOrLoseLocked(opSetMeta, s.answerLocked())
}

// The fake holds lease blobs only: a helper blob's content is not faked.
func (f fakeAPI) putContent(context.Context, []byte, string, map[string]string) (answer, error) {
	panic("fakeAPI: putContent is not faked")
}

func (f fakeAPI) getContent(context.Context, int64) (blobContent, error) {
	panic("fakeAPI: getContent is not faked")
}

func (f fakeAPI) deleteBlob(ctx context.Context) (_ answer, err error) {
	defer f.mapped("delete blob", &err)
	s := f.s
	if err := s.enter(ctx, opDelete); err != nil {
		return answer{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.missingLocked(); err != nil {
		return answer{}, err
	}
	if s.stateLocked() == StateLeased {
		return answer{}, respErr(http.StatusPreconditionFailed, "LeaseIdMissing")
	}
	s.blobExists, s.meta = false, map[string]string{}
	s.leaseID, s.state = "", StateAvailable
	return s.answerLocked(), nil
}
