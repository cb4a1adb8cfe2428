package lease

// requests.go: single requests on a container and its blobs, for a client
// that tries what its credential may do rather than runs (leaderrun
// doctor). Each is one request, bounded by requestTimeout and never
// retried, and says what the service answered: any answer but 2xx is a
// *StorageError, a blob or a container that does not exist (BlobMissing,
// ContainerMissing) or one that exists already (AlreadyExists) included;
// a done ctx returns ctx.Err(). None of them keeps a lease or records a
// run: the promise (doc.go) is an Elector's and its Lease's, and so is a
// lease blob's metadata.

import (
	"context"
	"time"
)

// request sends one request with f, bounded by requestTimeout.
func request[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	v, err := f(rctx)
	if err != nil && ctx.Err() != nil {
		var zero T
		return zero, ctx.Err()
	}
	return v, err
}

// AccountInfo reads Get Account Information: the account's kind, SKU and
// hierarchical namespace.
func (c *Container) AccountInfo(ctx context.Context) (AccountInfo, error) {
	return request(ctx, c.api.accountInfo)
}

// Settings reads Get Container Properties: the container's settings that
// refuse writes.
func (c *Container) Settings(ctx context.Context) (ContainerSettings, error) {
	return request(ctx, c.api.containerInfo)
}

// Create creates the container, as the first run does when it is missing.
func (c *Container) Create(ctx context.Context) error {
	_, err := request(ctx, c.createContainer)
	return err
}

// ListNames lists the names of the container's blobs under prefix, in
// name order, a hierarchical namespace's directories included: the
// request of List, which reads what it lists and takes a missing
// container as empty.
func (c *Container) ListNames(ctx context.Context, prefix string) ([]string, error) {
	blobs, err := request(ctx, func(ctx context.Context) ([]listedBlob, error) {
		blobs, _, err := c.api.listBlobs(ctx, prefix, listAll)
		return blobs, err
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(blobs))
	for _, b := range blobs {
		names = append(names, b.Name)
	}
	return names, nil
}

// Create creates the blob, zero-length, as the first run creates a lease
// blob (If-None-Match: *): it never replaces one.
func (b *Blob) Create(ctx context.Context) error {
	_, err := request(ctx, b.api.createBlob)
	return err
}

// Read reads the blob's properties and keeps nothing of them: whether the
// read is allowed, and whether the blob exists. Properties is the read
// that returns them.
func (b *Blob) Read(ctx context.Context) error {
	_, err := request(ctx, b.api.getProperties)
	return err
}

// Delete deletes the blob, sending no lease ID (a leased blob is refused).
func (b *Blob) Delete(ctx context.Context) error {
	_, err := request(ctx, b.api.deleteBlob)
	return err
}

// AcquireLease acquires the blob's lease for d (whole seconds from 15s to
// 60s) with the lease ID id, and returns the blob's ETag after it. Nothing
// renews that lease and nothing watches it: a run acquires through an
// Elector, whose keeper does both.
func (b *Blob) AcquireLease(ctx context.Context, id string, d time.Duration) (etag string, err error) {
	if d < MinDuration || d > MaxDuration || d%time.Second != 0 {
		return "", configErr("lease duration", "%s: want whole seconds from 15s to 60s (infinite leases are refused)", d)
	}
	ans, err := request(ctx, func(ctx context.Context) (answer, error) { return b.api.acquireLease(ctx, id, int(d/time.Second)) })
	return ans.ETag, err
}

// RenewLease renews the blob's lease held with the lease ID id.
func (b *Blob) RenewLease(ctx context.Context, id string) error {
	_, err := request(ctx, func(ctx context.Context) (answer, error) { return b.api.renewLease(ctx, id) })
	return err
}

// ReleaseLease releases the blob's lease held with the lease ID id.
func (b *Blob) ReleaseLease(ctx context.Context, id string) error {
	_, err := request(ctx, func(ctx context.Context) (answer, error) { return b.api.releaseLease(ctx, id) })
	return err
}

// SetMetadata replaces the blob's metadata with md (names lowercased), on
// the conditions that its lease is held with leaseID and its ETag is
// ifMatch, each unless "". A lease blob's metadata is its runs' record,
// which a Lease writes (record.go): this is for other blobs.
func (b *Blob) SetMetadata(ctx context.Context, md map[string]string, leaseID, ifMatch string) error {
	_, err := request(ctx, func(ctx context.Context) (answer, error) { return b.api.setMetadata(ctx, leaseID, ifMatch, md) })
	return err
}
