package lease

// The storage edge: the Blob service requests leaderrun makes, as one
// narrow interface, and azBlob and azContainer, which send them with the
// Azure SDK (azblob v1.8.0). Unit tests put a fake in their place.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	azlease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

// blobAPI is the requests on one blob and its container. A refusal (any
// status but 2xx) or a failure of the transport or the context comes out
// as a *StorageError, classified once at the edge (Container.fail).
type blobAPI interface {
	// Lease Blob, x-ms-lease-action acquire, with a proposed lease ID and
	// a duration in whole seconds (15–60).
	acquireLease(ctx context.Context, leaseID string, seconds int) (answer, error)
	renewLease(ctx context.Context, leaseID string) (answer, error)
	releaseLease(ctx context.Context, leaseID string) (answer, error)
	// breakLease needs no lease ID; periodSeconds < 0 sends no period.
	// answer.LeaseTime is the time left until the lease is broken.
	breakLease(ctx context.Context, periodSeconds int) (answer, error)
	getProperties(ctx context.Context) (blobProps, error) // Get Blob Properties (HEAD)
	// setMetadata is Set Blob Metadata: md replaces the blob's, on the
	// conditions leaseID and If-Match: ifMatch (each unless "").
	setMetadata(ctx context.Context, leaseID, ifMatch string, md map[string]string) (answer, error)
	// createBlob is Put Blob: a zero-length block blob, If-None-Match: *.
	createBlob(ctx context.Context) (answer, error)
	createContainer(ctx context.Context) (answer, error)
	// putBlob is Put Blob without conditions: a zero-length block blob
	// with metadata md, replacing any (a marker, never a lease blob).
	putBlob(ctx context.Context, md map[string]string) (answer, error)
	// deleteBlob is Delete Blob, without a lease ID (a marker).
	deleteBlob(ctx context.Context) (answer, error)
	// putContent is Put Blob without conditions: a block blob of body, with
	// its content type and metadata md, replacing any (a helper blob, never
	// a lease blob).
	putContent(ctx context.Context, body []byte, contentType string, md map[string]string) (answer, error)
	// getContent is Get Blob: the blob's metadata and its body, of which
	// more than limit bytes is an error.
	getContent(ctx context.Context, limit int64) (blobContent, error)
}

// answer is what leaderrun reads from a successful response.
type answer struct {
	Date      time.Time // the Date header; zero if absent or malformed
	ETag      string    // the ETag header, quotes included; "" if absent
	LeaseTime int       // x-ms-lease-time in seconds (Break Lease); -1 if absent
}

// blobProps is a Get Blob Properties answer.
type blobProps struct {
	answer
	LeaseState string            // x-ms-lease-state; "" if absent
	Metadata   map[string]string // x-ms-meta-*, names lowercased; never nil
	Created    time.Time         // x-ms-creation-time; zero if absent
}

// blobContent is a Get Blob answer.
type blobContent struct {
	answer
	Metadata map[string]string // x-ms-meta-*, names lowercased; never nil
	Body     []byte
}

// azBlob sends blobAPI's requests on one blob with its SDK clients and, for
// Create Container, the container's (all share clientOptions).
type azBlob struct {
	c         *Container
	blob      *blob.Client
	blockBlob *blockblob.Client
}

// azContainer sends containerAPI's requests, as azBlob does.
type azContainer struct {
	c         *Container
	container *container.Client
}

var (
	_ blobAPI      = (*azBlob)(nil)
	_ containerAPI = (*azContainer)(nil)
)

// sdkClient builds an SDK client (the container's, or a blob's at its
// escaped URL) with c's credential, through the constructor each of the
// SDK's client types has for it. It makes no request.
func sdkClient[C, O any](c *Container, url string, opts O,
	withKey func(string, *blob.SharedKeyCredential, O) (C, error),
	withSAS func(string, O) (C, error),
	withToken func(string, azcore.TokenCredential, O) (C, error),
) (C, error) {
	switch c.src.auth {
	case authSharedKey:
		return withKey(url, c.key, opts)
	case authSAS:
		return withSAS(url+"?"+c.src.sas, opts)
	}
	return withToken(url, c.token, opts)
}

// clientOptions are the options of every SDK client: no SDK retries
// (leaderrun retries with its own deadlines), every try bounded by
// tryTimeout, no telemetry header, the bounded transport, a bearer token
// over plain http only to a loopback host (Azurite), and a listing's
// startFrom sent (startFromPolicy, list.go). tr, if not nil, replaces the
// bounded transport (ClientConfig.Transport).
func clientOptions(loopback bool, tr policy.Transporter) azcore.ClientOptions {
	if tr == nil {
		tr = newTransport()
	}
	return azcore.ClientOptions{
		PerCallPolicies:                 []policy.Policy{startFromPolicy{}},
		Retry:                           policy.RetryOptions{MaxRetries: -1, TryTimeout: tryTimeout},
		Telemetry:                       policy.TelemetryOptions{Disabled: true},
		Transport:                       tr,
		InsecureAllowCredentialWithHTTP: loopback,
	}
}

// lease is the SDK's lease client for leaseID: azblob binds one to a
// lease ID when it is made (cheap: no request, no new pipeline).
func (a *azBlob) lease(leaseID string) (*azlease.BlobClient, error) {
	return azlease.NewBlobClient(a.blob, &azlease.BlobClientOptions{LeaseID: &leaseID})
}

func (a *azBlob) acquireLease(ctx context.Context, leaseID string, seconds int) (answer, error) {
	l, err := a.lease(leaseID)
	if err != nil {
		return answer{}, a.c.fail("acquire", err)
	}
	r, err := l.AcquireLease(ctx, int32(seconds), nil)
	return newAnswer(r.Date, r.ETag), a.c.fail("acquire", err)
}

func (a *azBlob) renewLease(ctx context.Context, leaseID string) (answer, error) {
	l, err := a.lease(leaseID)
	if err != nil {
		return answer{}, a.c.fail("renew", err)
	}
	r, err := l.RenewLease(ctx, nil)
	return newAnswer(r.Date, r.ETag), a.c.fail("renew", err)
}

func (a *azBlob) releaseLease(ctx context.Context, leaseID string) (answer, error) {
	l, err := a.lease(leaseID)
	if err != nil {
		return answer{}, a.c.fail("release", err)
	}
	r, err := l.ReleaseLease(ctx, nil)
	return newAnswer(r.Date, r.ETag), a.c.fail("release", err)
}

func (a *azBlob) breakLease(ctx context.Context, periodSeconds int) (answer, error) {
	l, err := a.lease("") // Break Lease sends no lease ID
	if err != nil {
		return answer{}, a.c.fail("break", err)
	}
	var opts azlease.BlobBreakOptions
	if periodSeconds >= 0 {
		period := int32(periodSeconds)
		opts.BreakPeriod = &period
	}
	r, err := l.BreakLease(ctx, &opts)
	if err != nil {
		return answer{}, a.c.fail("break", err)
	}
	ans := newAnswer(r.Date, r.ETag)
	if r.LeaseTime != nil && *r.LeaseTime >= 0 {
		ans.LeaseTime = int(*r.LeaseTime)
	}
	return ans, nil
}

func (a *azBlob) getProperties(ctx context.Context) (blobProps, error) {
	r, err := a.blob.GetProperties(ctx, nil)
	if err != nil {
		return blobProps{}, a.c.fail("get properties", err)
	}
	return blobProps{answer: newAnswer(r.Date, r.ETag), Metadata: lowerKeys(r.Metadata),
		LeaseState: string(deref(r.LeaseState)), Created: deref(r.CreationTime).UTC()}, nil
}

// lowerKeys is metadata as the SDK reads it (from canonicalized headers:
// "Holder"), its names lowercased as leaderrun writes and reads them.
func lowerKeys(md map[string]*string) map[string]string {
	out := make(map[string]string, len(md))
	for k, v := range md {
		if v != nil {
			out[strings.ToLower(k)] = *v
		}
	}
	return out
}

// sdkMetadata is md for the SDK, names lowercased (Azure keeps the case sent).
func sdkMetadata(md map[string]string) map[string]*string {
	meta := make(map[string]*string, len(md))
	for k, v := range md {
		meta[strings.ToLower(k)] = &v
	}
	return meta
}

func (a *azBlob) setMetadata(ctx context.Context, leaseID, ifMatch string, md map[string]string) (answer, error) {
	ac := &blob.AccessConditions{}
	if leaseID != "" {
		ac.LeaseAccessConditions = &blob.LeaseAccessConditions{LeaseID: &leaseID}
	}
	if ifMatch != "" {
		etag := azcore.ETag(ifMatch)
		ac.ModifiedAccessConditions = &blob.ModifiedAccessConditions{IfMatch: &etag}
	}
	r, err := a.blob.SetMetadata(ctx, sdkMetadata(md), &blob.SetMetadataOptions{AccessConditions: ac})
	return newAnswer(r.Date, r.ETag), a.c.fail("set metadata", err)
}

func (a *azBlob) createBlob(ctx context.Context) (answer, error) {
	anyTag := azcore.ETagAny
	r, err := a.blockBlob.Upload(ctx, streaming.NopCloser(bytes.NewReader(nil)), &blockblob.UploadOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &anyTag}},
	})
	return newAnswer(r.Date, r.ETag), a.c.fail("create blob", err)
}

func (a *azBlob) createContainer(ctx context.Context) (answer, error) {
	return a.c.createContainer(ctx)
}

// createContainer is Create Container, through the container's SDK client.
func (c *Container) createContainer(ctx context.Context) (answer, error) {
	r, err := c.sdk.Create(ctx, nil)
	return newAnswer(r.Date, r.ETag), c.fail("create container", err)
}

func (a *azBlob) putBlob(ctx context.Context, md map[string]string) (answer, error) {
	r, err := a.blockBlob.Upload(ctx, streaming.NopCloser(bytes.NewReader(nil)), &blockblob.UploadOptions{Metadata: sdkMetadata(md)})
	return newAnswer(r.Date, r.ETag), a.c.fail("put blob", err)
}

func (a *azBlob) putContent(ctx context.Context, body []byte, contentType string, md map[string]string) (answer, error) {
	r, err := a.blockBlob.Upload(ctx, streaming.NopCloser(bytes.NewReader(body)), &blockblob.UploadOptions{
		Metadata: sdkMetadata(md), HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &contentType}})
	return newAnswer(r.Date, r.ETag), a.c.fail("put blob", err)
}

func (a *azBlob) getContent(ctx context.Context, limit int64) (blobContent, error) {
	r, err := a.blob.DownloadStream(ctx, nil)
	if err != nil {
		return blobContent{}, a.c.fail("get blob", err)
	}
	defer r.Body.Close()
	c := blobContent{answer: newAnswer(r.Date, r.ETag), Metadata: lowerKeys(r.Metadata)}
	tooLarge := &StorageError{Op: "get blob", Err: fmt.Errorf("the blob holds more than the %d bytes expected", limit), kind: kindPermanent, summary: "blob too large"}
	if r.ContentLength != nil && *r.ContentLength > limit {
		return blobContent{}, tooLarge
	}
	if c.Body, err = io.ReadAll(io.LimitReader(r.Body, limit+1)); err != nil {
		return blobContent{}, a.c.fail("get blob", err)
	}
	if int64(len(c.Body)) > limit {
		return blobContent{}, tooLarge
	}
	return c, nil
}

func (a *azBlob) deleteBlob(ctx context.Context) (answer, error) {
	r, err := a.blob.Delete(ctx, nil)
	return newAnswer(r.Date, nil), a.c.fail("delete blob", err)
}

// AccountInfo is what Get Account Information says of the account.
type AccountInfo struct {
	Kind, SKU string // "" if not said
	HNS       bool   // hierarchical namespace (Data Lake Storage)
}

// ContainerSettings is what Get Container Properties says of the
// container's settings that refuse writes.
type ContainerSettings struct {
	ImmutabilityPolicy, LegalHold bool
}

// The names containerAPI (list.go) gives them.
type (
	accountInfo   = AccountInfo
	containerInfo = ContainerSettings
)

func (a *azContainer) accountInfo(ctx context.Context) (AccountInfo, error) {
	r, err := a.container.GetAccountInfo(ctx, nil)
	if err != nil {
		return AccountInfo{}, a.c.fail("get account information", err)
	}
	return AccountInfo{Kind: string(deref(r.AccountKind)), SKU: string(deref(r.SKUName)), HNS: deref(r.IsHierarchicalNamespaceEnabled)}, nil
}

func (a *azContainer) containerInfo(ctx context.Context) (ContainerSettings, error) {
	r, err := a.container.GetProperties(ctx, nil)
	if err != nil {
		return ContainerSettings{}, a.c.fail("get container properties", err)
	}
	return ContainerSettings{ImmutabilityPolicy: deref(r.HasImmutabilityPolicy), LegalHold: deref(r.HasLegalHold)}, nil
}

// newAnswer reads a response's Date and ETag headers, as the SDK parsed them.
func newAnswer(date *time.Time, etag *azcore.ETag) answer {
	return answer{Date: deref(date).UTC(), ETag: string(deref(etag)), LeaseTime: -1}
}

// deref is *p, or the zero value for nil: the SDK answers with pointers.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}
