package blobsim_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	azlease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
)

// client is one contender's SDK clients of container ctr, as lease sets
// them up: no SDK retries, every try bounded by tryTimeout, through the
// Service's Transport for name.
type client struct {
	t  testing.TB
	cc *container.Client
}

func newClient(t testing.TB, s *blobsim.Service, name string, tryTimeout time.Duration, perCall ...policy.Policy) *client {
	t.Helper()
	cred, err := blob.NewSharedKeyCredential(blobsim.Account, blobsim.Key)
	if err != nil {
		t.Fatal(err)
	}
	opts := azcore.ClientOptions{
		Transport:       s.Transport(name),
		Retry:           policy.RetryOptions{MaxRetries: -1, TryTimeout: tryTimeout},
		Telemetry:       policy.TelemetryOptions{Disabled: true},
		PerCallPolicies: perCall,
	}
	cc, err := container.NewClientWithSharedKeyCredential(blobsim.Endpoint+"/"+ctr, cred, &container.ClientOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	return &client{t: t, cc: cc}
}

func (c *client) blob(name string) *blockblob.Client { return c.cc.NewBlockBlobClient(name) }

func (c *client) lease(name, id string) *azlease.BlobClient {
	l, err := azlease.NewBlobClient(c.blob(name).BlobClient(), &azlease.BlobClientOptions{LeaseID: &id})
	if err != nil {
		c.t.Fatal(err)
	}
	return l
}

// setup makes container ctr and blob "x" (with setup's own client).
func setup(t testing.TB, s *blobsim.Service) {
	t.Helper()
	c := newClient(t, s, "setup", 0)
	if _, err := c.cc.Create(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	c.create("x")
}

func (c *client) create(name string) {
	c.t.Helper()
	if _, err := c.blob(name).Upload(context.Background(), streaming.NopCloser(bytes.NewReader(nil)), nil); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) acquire(ctx context.Context, name, id string, seconds int32) error {
	_, err := c.lease(name, id).AcquireLease(ctx, seconds, nil)
	return err
}

func (c *client) breakLease(ctx context.Context, name string, period int32) (int32, error) {
	opts := &azlease.BlobBreakOptions{}
	if period >= 0 {
		opts.BreakPeriod = &period
	}
	r, err := c.lease(name, "").BreakLease(ctx, opts)
	if err != nil {
		return 0, err
	}
	return *r.LeaseTime, nil
}

func (c *client) state(name string) string {
	c.t.Helper()
	p, err := c.blob(name).GetProperties(context.Background(), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return string(*p.LeaseState)
}

// code is err's Azure error code and status; "" and 0 for nil; fatal for
// an error without an answer.
func code(t testing.TB, err error) (int, string) {
	t.Helper()
	if err == nil {
		return 0, ""
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("not an answer: %v", err)
	}
	return re.StatusCode, re.ErrorCode
}

// ids are lease IDs for tests.
const (
	idA = "aaaaaaaa-0000-4000-8000-000000000001"
	idB = "bbbbbbbb-0000-4000-8000-000000000002"
	idC = "cccccccc-0000-4000-8000-000000000003"
)

// headerRecorder keeps the headers of every answer its client gets.
type headerRecorder struct{ answers []http.Header }

func (h *headerRecorder) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if resp != nil {
		h.answers = append(h.answers, resp.Header)
	}
	return resp, err
}

// ctr is the container of the unit tests.
const ctr = "ctr"
