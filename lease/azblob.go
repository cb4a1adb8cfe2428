// azBlob: blobAPI's ten requests sent with the Azure SDK (azblob v1.8.0),
// and the narrow interfaces of the SDK clients it uses.

package lease

import (
	"bytes"
	"context"
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

// The parts of the SDK's clients that leaderrun calls.
type (
	// leaser is a lease client: azblob binds it to one lease ID when it is
	// made (Break Lease sends none).
	leaser interface {
		AcquireLease(ctx context.Context, duration int32, o *azlease.BlobAcquireOptions) (azlease.BlobAcquireResponse, error)
		RenewLease(ctx context.Context, o *azlease.BlobRenewOptions) (azlease.BlobRenewResponse, error)
		ReleaseLease(ctx context.Context, o *azlease.BlobReleaseOptions) (azlease.BlobReleaseResponse, error)
		BreakLease(ctx context.Context, o *azlease.BlobBreakOptions) (azlease.BlobBreakResponse, error)
	}
	blobClient interface {
		GetProperties(ctx context.Context, o *blob.GetPropertiesOptions) (blob.GetPropertiesResponse, error)
		SetMetadata(ctx context.Context, md map[string]*string, o *blob.SetMetadataOptions) (blob.SetMetadataResponse, error)
		Delete(ctx context.Context, o *blob.DeleteOptions) (blob.DeleteResponse, error)
	}
	uploader interface {
		Upload(ctx context.Context, body io.ReadSeekCloser, o *blockblob.UploadOptions) (blockblob.UploadResponse, error)
	}
	containerCreator interface {
		Create(ctx context.Context, o *container.CreateOptions) (container.CreateResponse, error)
	}
)

var (
	_ leaser           = (*azlease.BlobClient)(nil)
	_ blobClient       = (*blob.Client)(nil)
	_ uploader         = (*blockblob.Client)(nil)
	_ containerCreator = (*container.Client)(nil)
)

var _ blobAPI = (*azBlob)(nil)

// azBlob sends blobAPI's requests through the SDK's clients for one blob
// and its container, which share one set of client options (no SDK
// retries, a bounded try, the bounded transport).
type azBlob struct {
	blob      blobClient
	blockBlob uploader
	container containerCreator
	// leaser makes the lease client for a lease ID (cheap: no request, no
	// new pipeline).
	leaser func(leaseID string) (leaser, error)
}

// azAuth is how requests are authorized: a Shared Key credential, a SAS
// token (a query string without '?'), or an Entra ID token credential.
// Exactly one is set.
type azAuth struct {
	key   *blob.SharedKeyCredential
	sas   string
	token azcore.TokenCredential
}

// newAzBlob builds the SDK clients for blobURL (escaped, no query) and
// containerURL. It makes no request.
func newAzBlob(blobURL, containerURL string, auth azAuth, opts azcore.ClientOptions) (*azBlob, error) {
	var (
		bb  *blockblob.Client
		cc  *container.Client
		err error
	)
	bo := &blockblob.ClientOptions{ClientOptions: opts}
	co := &container.ClientOptions{ClientOptions: opts}
	switch {
	case auth.key != nil:
		if bb, err = blockblob.NewClientWithSharedKeyCredential(blobURL, auth.key, bo); err == nil {
			cc, err = container.NewClientWithSharedKeyCredential(containerURL, auth.key, co)
		}
	case auth.sas != "":
		if bb, err = blockblob.NewClientWithNoCredential(blobURL+"?"+auth.sas, bo); err == nil {
			cc, err = container.NewClientWithNoCredential(containerURL+"?"+auth.sas, co)
		}
	default:
		if bb, err = blockblob.NewClient(blobURL, auth.token, bo); err == nil {
			cc, err = container.NewClient(containerURL, auth.token, co)
		}
	}
	if err != nil {
		return nil, err
	}
	b := bb.BlobClient()
	return &azBlob{
		blob: b, blockBlob: bb, container: cc,
		leaser: func(id string) (leaser, error) {
			return azlease.NewBlobClient(b, &azlease.BlobClientOptions{LeaseID: &id})
		},
	}, nil
}

// clientOptions are the options of every SDK client: no SDK retries
// (leaderrun retries with its own deadlines), every try bounded by
// tryTimeout, no telemetry header, the bounded transport, and a bearer
// token over plain http only to a loopback host (Azurite).
func clientOptions(loopback bool) azcore.ClientOptions {
	return azcore.ClientOptions{
		Retry:                           policy.RetryOptions{MaxRetries: -1, TryTimeout: tryTimeout},
		Telemetry:                       policy.TelemetryOptions{Disabled: true},
		Transport:                       newTransport(),
		InsecureAllowCredentialWithHTTP: loopback,
	}
}

func (a *azBlob) acquireLease(ctx context.Context, leaseID string, seconds int) (answer, error) {
	l, err := a.leaser(leaseID)
	if err != nil {
		return answer{}, err
	}
	r, err := l.AcquireLease(ctx, int32(seconds), nil)
	if err != nil {
		return answer{}, err
	}
	return newAnswer(r.Date, r.ETag), nil
}

func (a *azBlob) renewLease(ctx context.Context, leaseID string) (answer, error) {
	l, err := a.leaser(leaseID)
	if err != nil {
		return answer{}, err
	}
	r, err := l.RenewLease(ctx, nil)
	if err != nil {
		return answer{}, err
	}
	return newAnswer(r.Date, r.ETag), nil
}

func (a *azBlob) releaseLease(ctx context.Context, leaseID string) (answer, error) {
	l, err := a.leaser(leaseID)
	if err != nil {
		return answer{}, err
	}
	r, err := l.ReleaseLease(ctx, nil)
	if err != nil {
		return answer{}, err
	}
	return newAnswer(r.Date, r.ETag), nil
}

func (a *azBlob) breakLease(ctx context.Context, periodSeconds int) (answer, error) {
	l, err := a.leaser("") // Break Lease sends no lease ID
	if err != nil {
		return answer{}, err
	}
	var opts azlease.BlobBreakOptions
	if periodSeconds >= 0 {
		period := int32(periodSeconds)
		opts.BreakPeriod = &period
	}
	r, err := l.BreakLease(ctx, &opts)
	if err != nil {
		return answer{}, err
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
		return blobProps{}, err
	}
	p := blobProps{answer: newAnswer(r.Date, r.ETag), Metadata: make(map[string]string, len(r.Metadata))}
	if r.LeaseState != nil {
		p.LeaseState = string(*r.LeaseState)
	}
	if r.CreationTime != nil {
		p.Created = r.CreationTime.UTC()
	}
	for k, v := range r.Metadata {
		// The SDK reads the names from canonicalized headers
		// ("Holder"); leaderrun writes and reads them lowercased.
		if v != nil {
			p.Metadata[strings.ToLower(k)] = *v
		}
	}
	return p, nil
}

func (a *azBlob) setMetadata(ctx context.Context, leaseID, ifMatch string, md map[string]string) (answer, error) {
	meta := make(map[string]*string, len(md))
	for k, v := range md {
		// The SDK sends the names as given, and Azure keeps their case:
		// leaderrun writes every name lowercased.
		meta[strings.ToLower(k)] = &v
	}
	ac := &blob.AccessConditions{}
	if leaseID != "" {
		ac.LeaseAccessConditions = &blob.LeaseAccessConditions{LeaseID: &leaseID}
	}
	if ifMatch != "" {
		etag := azcore.ETag(ifMatch)
		ac.ModifiedAccessConditions = &blob.ModifiedAccessConditions{IfMatch: &etag}
	}
	r, err := a.blob.SetMetadata(ctx, meta, &blob.SetMetadataOptions{AccessConditions: ac})
	if err != nil {
		return answer{}, err
	}
	return newAnswer(r.Date, r.ETag), nil
}

func (a *azBlob) createBlob(ctx context.Context) (answer, error) {
	anyTag := azcore.ETagAny
	r, err := a.blockBlob.Upload(ctx, streaming.NopCloser(bytes.NewReader(nil)), &blockblob.UploadOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &anyTag}},
	})
	if err != nil {
		return answer{}, err
	}
	return newAnswer(r.Date, r.ETag), nil
}

func (a *azBlob) createContainer(ctx context.Context) (answer, error) {
	r, err := a.container.Create(ctx, nil)
	if err != nil {
		return answer{}, err
	}
	return newAnswer(r.Date, r.ETag), nil
}

func (a *azBlob) putBlob(ctx context.Context, md map[string]string) (answer, error) {
	meta := make(map[string]*string, len(md))
	for k, v := range md {
		meta[strings.ToLower(k)] = &v
	}
	r, err := a.blockBlob.Upload(ctx, streaming.NopCloser(bytes.NewReader(nil)), &blockblob.UploadOptions{Metadata: meta})
	if err != nil {
		return answer{}, err
	}
	return newAnswer(r.Date, r.ETag), nil
}

func (a *azBlob) deleteBlob(ctx context.Context) (answer, error) {
	r, err := a.blob.Delete(ctx, nil)
	if err != nil {
		return answer{}, err
	}
	return newAnswer(r.Date, nil), nil
}

// newAnswer reads a response's Date and ETag headers, as the SDK parsed them.
func newAnswer(date *time.Time, etag *azcore.ETag) answer {
	a := answer{LeaseTime: -1}
	if date != nil {
		a.Date = date.UTC()
	}
	if etag != nil {
		a.ETag = string(*etag)
	}
	return a
}
