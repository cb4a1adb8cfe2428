// The storage edge: the Blob service requests leaderrun makes, as one
// narrow interface. azBlob (azblob.go) sends them with the Azure SDK; unit
// tests put a fake in its place (fake_test.go).

package lease

import (
	"context"
	"time"
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
	// breakLease needs no lease ID; answer.LeaseTime is the time left until
	// the lease is broken.
	breakLease(ctx context.Context, periodSeconds int) (answer, error) // periodSeconds < 0: no period
	getProperties(ctx context.Context) (blobProps, error)              // Get Blob Properties (HEAD)
	// setMetadata is Set Blob Metadata: md replaces the blob's metadata,
	// with leaseID as access condition and, if ifMatch is not empty,
	// If-Match: ifMatch.
	setMetadata(ctx context.Context, leaseID, ifMatch string, md map[string]string) (answer, error)
	// createBlob is Put Blob: a zero-length block blob, If-None-Match: *.
	createBlob(ctx context.Context) (answer, error)
	createContainer(ctx context.Context) (answer, error)
	// putBlob is Put Blob without conditions: a zero-length block blob
	// with metadata md, replacing the blob and its metadata if it exists
	// (a marker: leaderrun never calls it on a lease blob).
	putBlob(ctx context.Context, md map[string]string) (answer, error)
	// deleteBlob is Delete Blob, without a lease ID (a marker).
	deleteBlob(ctx context.Context) (answer, error)
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
