// Listing: a container's blobs under a prefix, with lease state and metadata.

package lease

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// containerAPI is the storage edge for requests on the whole container,
// sent by azContainer or a test's fake; failures are *StorageError.
type containerAPI interface {
	// listBlobs lists the blobs under prefix with their lease state and
	// metadata, every page; the answer is the last page's. With skipHelpers
	// (and prefix "") it does not page through the helper blobs (names.go):
	// it stops where they begin and goes on after them (startFrom).
	listBlobs(ctx context.Context, prefix string, skipHelpers bool) ([]listedBlob, answer, error)
	accountInfo(ctx context.Context) (accountInfo, error)     // Get Account Information (azblob.go)
	containerInfo(ctx context.Context) (containerInfo, error) // Get Container Properties (azblob.go)
}

// listedBlob is one blob of a listing.
type listedBlob struct {
	Name       string
	LeaseState string            // "" if absent
	ETag       string            // quoted, as a response header gives it
	Metadata   map[string]string // names lowercased; never nil
}

// maxListPages bounds a listing: at 5,000 blobs a page, half a million, far
// beyond a container of leases; one that would go on is an error.
const maxListPages = 100

func (a *azContainer) listBlobs(ctx context.Context, prefix string, skipHelpers bool) ([]listedBlob, answer, error) {
	blobs, last, err := listPages(ctx, a.container, prefix, skipHelpers)
	return blobs, last, a.c.fail("list blobs", err)
}

// pagerLister is the SDK container client's lister (a test serves pages).
type pagerLister interface {
	NewListBlobsFlatPager(o *container.ListBlobsFlatOptions) *runtime.Pager[container.ListBlobsFlatResponse]
}

// listPages is listBlobs on pl, its failures not yet mapped.
func listPages(ctx context.Context, pl pagerLister, prefix string, skipHelpers bool) ([]listedBlob, answer, error) {
	opts := &container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Metadata: true}}
	if prefix != "" {
		opts.Prefix = &prefix
	}
	var (
		blobs []listedBlob
		last  answer
		pages int
	)
	// list lists by opts until the pager ends, or until keep says stop.
	list := func(keep func(name string) (take, more bool)) error {
		for pager := pl.NewListBlobsFlatPager(opts); pager.More(); {
			if pages == maxListPages {
				return fmt.Errorf("lease: more than %d pages of blobs under %q", maxListPages, prefix)
			}
			pages++
			page, err := pager.NextPage(ctx)
			if err != nil {
				return err
			}
			last = newAnswer(page.Date, nil)
			if page.Segment == nil {
				continue
			}
			for _, item := range page.Segment.BlobItems {
				if item == nil || item.Name == nil {
					continue
				}
				take, more := keep(*item.Name)
				if !more {
					return nil
				}
				if take {
					blobs = append(blobs, toListedBlob(item))
				}
			}
		}
		return nil
	}
	reached := false // the helper blobs were reached, and skipped
	keep := func(string) (bool, bool) { return true, true }
	if skipHelpers && prefix == "" {
		keep = func(name string) (bool, bool) {
			reached = strings.HasPrefix(name, HelperPrefix)
			return !reached, !reached
		}
	}
	err := list(keep)
	if err == nil && reached {
		// The names after the helper blobs: a service that does not know
		// startFrom lists from the start again, and those are skipped.
		from := afterHelpers
		opts.StartFrom = &from
		err = list(func(name string) (bool, bool) { return name >= afterHelpers, true })
	}
	if err != nil {
		return nil, answer{}, err
	}
	return blobs, last, nil
}

// toListedBlob reads one item of a listing.
func toListedBlob(item *container.BlobItem) listedBlob {
	b := listedBlob{Name: *item.Name, Metadata: make(map[string]string, len(item.Metadata))}
	if p := item.Properties; p != nil {
		if p.LeaseState != nil {
			b.LeaseState = string(*p.LeaseState)
		}
		if p.ETag != nil {
			b.ETag = quotedETag(string(*p.ETag))
		}
	}
	for k, v := range item.Metadata {
		if v != nil {
			b.Metadata[strings.ToLower(k)] = *v
		}
	}
	return b
}

// quotedETag: a listing gives the ETag bare (0x8D…), a response header
// quoted ("0x8D…"); the claim compares them, so a listing's is quoted.
func quotedETag(e string) string {
	if e == "" || strings.HasPrefix(e, `"`) || strings.HasPrefix(e, `W/"`) {
		return e
	}
	return `"` + e + `"`
}

// Listed is one blob of a listing, parsed as a read is (Date: the listing's).
type Listed struct {
	Name  string
	Props *Properties
}

// List lists the container's blobs under prefix ("" for all) with their
// lease state and metadata, one request per 5,000, in name order, and the
// service Date; not a hierarchical namespace's directories; a missing
// container lists empty. Failures are *StorageError, or a done ctx's error.
func (c *Container) List(ctx context.Context, prefix string) ([]Listed, time.Time, error) {
	return c.list(ctx, prefix, false)
}

// ListLeases lists the whole container without paging through the helper
// blobs (names.go: done markers), however many accumulate.
func (c *Container) ListLeases(ctx context.Context) ([]Listed, time.Time, error) {
	return c.list(ctx, "", true)
}

func (c *Container) list(ctx context.Context, prefix string, skipHelpers bool) ([]Listed, time.Time, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	blobs, ans, err := c.api.listBlobs(rctx, prefix, skipHelpers)
	switch se := asStorageError(err); {
	case err != nil && ctx.Err() != nil:
		return nil, time.Time{}, ctx.Err()
	case se != nil && se.kind == kindContainerMissing:
		return nil, se.date, nil
	case err != nil:
		return nil, time.Time{}, err
	}
	out := make([]Listed, 0, len(blobs))
	for _, b := range blobs {
		if isDirectory(b.Metadata) {
			continue // a hierarchical namespace's directory (isDirectory, blob.go)
		}
		p := PropertiesOf(State(b.LeaseState), b.Metadata, ans.Date)
		p.etag = b.ETag
		out = append(out, Listed{Name: b.Name, Props: p})
	}
	return out, ans.Date, nil
}
