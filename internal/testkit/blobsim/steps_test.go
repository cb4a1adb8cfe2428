package blobsim_test

// The conformance scenarios' steps: each one SDK call, as lease makes it,
// with azblob v1.8.0's clients.

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	azlease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

func createContainer() step {
	return step{what: "create container", do: func(r *run) error {
		_, err := r.cc.Create(r.ctx, nil)
		return err
	}}
}

func deleteContainer() step {
	return step{what: "delete container", do: func(r *run) error {
		_, err := r.cc.Delete(r.ctx, nil)
		return err
	}}
}

func containerProps(missing bool) step {
	return step{what: fmt.Sprintf("container properties (missing %v)", missing), do: func(r *run) error {
		cc := r.cc
		if missing {
			cc = r.client(r.name + "-none")
		}
		_, err := cc.GetProperties(r.ctx, nil)
		return err
	}}
}

func accountInfo() step {
	return step{what: "account information", do: func(r *run) error {
		_, err := r.cc.GetAccountInfo(r.ctx, nil)
		return err
	}}
}

// create is Put Blob with If-None-Match: *, as lease creates its blob.
func create(name string) step {
	return step{what: "create " + name, do: func(r *run) error {
		any := azcore.ETagAny
		_, err := r.blob(name).Upload(r.ctx, streaming.NopCloser(bytes.NewReader(nil)), &blockblob.UploadOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &any}},
		})
		return err
	}}
}

// createIn is create in a container that does not exist.
func createIn(missing, name string) step {
	return step{what: "create " + name + " in a missing container", do: func(r *run) error {
		_, err := r.client(r.name+missing).NewBlockBlobClient(name).Upload(r.ctx, streaming.NopCloser(bytes.NewReader(nil)), nil)
		return err
	}}
}

// put is Put Blob with metadata md ("k=v,k=v"), the lease ID label and
// If-Match label given (each unless "").
func put(name, md, leaseLabel, ifMatch string) step {
	return step{what: fmt.Sprintf("put %s md=%q lease=%q if-match=%q", name, short(md), leaseLabel, ifMatch), do: func(r *run) error {
		_, err := r.blob(name).Upload(r.ctx, streaming.NopCloser(bytes.NewReader(nil)), &blockblob.UploadOptions{
			Metadata: metadata(md), AccessConditions: r.conditions(leaseLabel, ifMatch)})
		return err
	}}
}

func setMeta(name, md, leaseLabel, ifMatch string) step {
	return step{what: fmt.Sprintf("set metadata %s md=%q lease=%q if-match=%q", name, short(md), leaseLabel, ifMatch), do: func(r *run) error {
		_, err := r.blob(name).SetMetadata(r.ctx, metadata(md), &blob.SetMetadataOptions{AccessConditions: r.conditions(leaseLabel, ifMatch)})
		return err
	}}
}

func props(name string) step {
	return step{what: "properties " + name, do: func(r *run) error {
		_, err := r.blob(name).GetProperties(r.ctx, nil)
		return err
	}}
}

func deleteBlob(name, leaseLabel, ifMatch string) step {
	return step{what: fmt.Sprintf("delete %s lease=%q if-match=%q", name, leaseLabel, ifMatch), do: func(r *run) error {
		_, err := r.blob(name).Delete(r.ctx, &blob.DeleteOptions{AccessConditions: r.conditions(leaseLabel, ifMatch)})
		return err
	}}
}

func (r *run) conditions(leaseLabel, ifMatch string) *blob.AccessConditions {
	ac := &blob.AccessConditions{}
	if leaseLabel != "" {
		id := r.id(leaseLabel)
		ac.LeaseAccessConditions = &blob.LeaseAccessConditions{LeaseID: &id}
	}
	if e := r.etag(ifMatch); e != nil {
		ac.ModifiedAccessConditions = &blob.ModifiedAccessConditions{IfMatch: e}
	}
	return ac
}

// short is md for a step's description.
func short(md string) string {
	if len(md) <= 40 {
		return md
	}
	return fmt.Sprintf("%s… (%d bytes)", md[:20], len(md))
}

func metadata(md string) map[string]*string {
	if md == "" {
		return nil
	}
	out := map[string]*string{}
	for kv := range strings.SplitSeq(md, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = &v
	}
	return out
}

func acquire(name, label string, seconds int32) step {
	return acquireIf(name, label, seconds, "")
}

func acquireIf(name, label string, seconds int32, ifMatch string) step {
	return step{what: fmt.Sprintf("acquire %s %s %ds if-match=%q", name, label, seconds, ifMatch), do: func(r *run) error {
		var opts *azlease.BlobAcquireOptions
		if e := r.etag(ifMatch); e != nil {
			opts = &azlease.BlobAcquireOptions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: e}}
		}
		_, err := r.lease(name, label).AcquireLease(r.ctx, seconds, opts)
		return err
	}}
}

// acquireIn is acquire in a container that does not exist.
func acquireIn(missing, name string) step {
	return step{what: "acquire " + name + " in a missing container", do: func(r *run) error {
		id := r.id("A")
		l, err := azlease.NewBlobClient(r.client(r.name+missing).NewBlobClient(name), &azlease.BlobClientOptions{LeaseID: &id})
		if err != nil {
			return err
		}
		_, err = l.AcquireLease(r.ctx, 15, nil)
		return err
	}}
}

func renew(name, label string) step {
	return step{what: fmt.Sprintf("renew %s %s", name, label), do: func(r *run) error {
		_, err := r.lease(name, label).RenewLease(r.ctx, nil)
		return err
	}}
}

func release(name, label string) step {
	return step{what: fmt.Sprintf("release %s %s", name, label), do: func(r *run) error {
		_, err := r.lease(name, label).ReleaseLease(r.ctx, nil)
		return err
	}}
}

func change(name, label, to string) step {
	return step{what: fmt.Sprintf("change %s %s to %s", name, label, to), do: func(r *run) error {
		_, err := r.lease(name, label).ChangeLease(r.ctx, r.id(to), nil)
		return err
	}}
}

// breakLease breaks with a period, or none (period < 0).
func breakLease(name string, period int32) step {
	return step{what: fmt.Sprintf("break %s period %d", name, period), do: func(r *run) error {
		opts := &azlease.BlobBreakOptions{}
		if period >= 0 {
			opts.BreakPeriod = &period
		}
		_, err := r.lease(name, "").BreakLease(r.ctx, opts)
		return err
	}}
}

// list lists prefix, max a page (0: the service's default), with metadata,
// from startFrom (sent past the SDK, see recorder) unless "".
func list(prefix string, max int32, startFrom string) step {
	return listWith(prefix, max, startFrom, true)
}

func listWith(prefix string, max int32, startFrom string, withMeta bool) step {
	return step{what: fmt.Sprintf("list prefix=%q max=%d startFrom=%q metadata=%v", prefix, max, startFrom, withMeta), do: func(r *run) error {
		opts := &container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Metadata: withMeta}}
		if prefix != "" {
			opts.Prefix = &prefix
		}
		if max > 0 {
			opts.MaxResults = &max
		}
		r.rec.startFrom = startFrom
		defer func() { r.rec.startFrom = "" }()
		r.pages = nil
		for pager := r.cc.NewListBlobsFlatPager(opts); pager.More(); {
			page, err := pager.NextPage(r.ctx)
			if err != nil {
				return err
			}
			var items []string
			for _, it := range page.Segment.BlobItems {
				items = append(items, r.item(it))
			}
			r.pages = append(r.pages, strings.Join(items, " | "))
			if len(r.pages) > 20 {
				r.t.Fatalf("%s: more than 20 pages", r.tg.name)
			}
		}
		return nil
	}}
}

// sdkStartFrom lists with the SDK's own StartFrom option.
func sdkStartFrom(from string) step {
	return step{what: fmt.Sprintf("list with the SDK's StartFrom %q", from), do: func(r *run) error {
		r.pages = nil
		for pager := r.cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{StartFrom: &from}); pager.More(); {
			page, err := pager.NextPage(r.ctx)
			if err != nil {
				return err
			}
			var items []string
			for _, it := range page.Segment.BlobItems {
				items = append(items, *it.Name)
			}
			r.pages = append(r.pages, strings.Join(items, " | "))
		}
		return nil
	}}
}

func (r *run) item(it *container.BlobItem) string {
	p := it.Properties
	s := fmt.Sprintf("%s %s %s", *it.Name, *p.LeaseState, r.etagLabel(string(*p.ETag)))
	if len(it.Metadata) > 0 { // none and an empty element read alike
		var md []string
		for k, v := range it.Metadata {
			md = append(md, strings.ToLower(k)+"="+*v)
		}
		slices.Sort(md)
		s += " {" + strings.Join(md, ",") + "}"
	}
	return s
}
