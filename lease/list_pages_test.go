package lease

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/hashicorp/go-hclog"
)

// pagedContainer serves a container's names in pages of two, in name
// order, honouring startFrom (as startFromPolicy sends it: from the
// request's context) or not, and counts the pages it serves.
type pagedContainer struct {
	names         []string
	honourStartAt bool
	served        []string // every name served, in order
	pages         int
}

func (f *pagedContainer) NewListBlobsFlatPager(*container.ListBlobsFlatOptions) *runtime.Pager[container.ListBlobsFlatResponse] {
	next := 0
	return runtime.NewPager(runtime.PagingHandler[container.ListBlobsFlatResponse]{
		More: func(r container.ListBlobsFlatResponse) bool { return r.NextMarker != nil },
		Fetcher: func(ctx context.Context, _ *container.ListBlobsFlatResponse) (container.ListBlobsFlatResponse, error) {
			names := f.names
			if from := startFromOf(ctx); f.honourStartAt && from != "" {
				names = names[sort.SearchStrings(names, from):]
			}
			f.pages++
			end := min(next+2, len(names))
			var items []*container.BlobItem
			for _, n := range names[next:end] {
				items = append(items, &container.BlobItem{Name: &n})
				f.served = append(f.served, n)
			}
			next = end
			r := container.ListBlobsFlatResponse{}
			r.Segment = &container.BlobFlatListSegment{BlobItems: items}
			if next < len(names) {
				m := strconv.Itoa(next)
				r.NextMarker = &m
			}
			now := time.Now()
			r.Date = &now
			return r, nil
		},
	})
}

// A lease's own listing (the slot poll's) takes NAME and NAME~…, and stops
// at the first other name that begins with NAME to go on from NAME~: with
// a service that honours startFrom, no page of NAME/… alone is fetched;
// with one that does not, NAME's own blobs after them are still found.
func TestListOwnSkipsOtherNamesOfItsPrefix(t *testing.T) {
	names := []string{"job", "job-old", "job/a", "job/b", "job/c", "job/d", "job/e", "job~pause", "job~slot-1"}
	for _, honour := range []bool{true, false} {
		f := &pagedContainer{names: names, honourStartAt: honour}
		got, _, err := listPages(context.Background(), f, "job", listOwn)
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, b := range got {
			listed = append(listed, b.Name)
		}
		if want := "job job~pause job~slot-1"; strings.Join(listed, " ") != want {
			t.Errorf("startFrom honoured %v: listed %q, want %q", honour, strings.Join(listed, " "), want)
		}
		if honour && slices.Contains(f.served, "job/c") {
			t.Errorf("served %q: a page of job/… alone was fetched", f.served)
		}
	}
}

// A listing of the leases stops where the helper blobs begin and goes on
// after them: with a service that honours startFrom, no page of helper
// blobs alone is ever fetched; with one that does not, the names after
// them are still found. Either way no helper blob is returned.
func TestListLeasesSkipsTheHelperBlobs(t *testing.T) {
	names := []string{"alpha", "beta", "~done/alpha~vm-1", "~done/alpha~vm-2", "~done/beta~vm-1", "~done/beta~vm-2", "\u00e9t\u00e9", "\u00fcber"}
	for _, honour := range []bool{true, false} {
		f := &pagedContainer{names: names, honourStartAt: honour}
		got, _, err := listPages(context.Background(), f, "", listSkipHelpers)
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, b := range got {
			listed = append(listed, b.Name)
		}
		if strings.Join(listed, ",") != "alpha,beta,\u00e9t\u00e9,\u00fcber" {
			t.Errorf("startFrom honoured %v: listed %v, want the four leases", honour, listed)
		}
		if honour && (f.pages != 3 || strings.Contains(strings.Join(f.served, ","), "~done/beta")) {
			t.Errorf("served %d pages %v: want the leases' page, the first helpers' page and the page after them", f.pages, f.served)
		}
	}
}

// slowPages serves pages of one blob each, every page after wait; a page
// whose request's deadline comes first fails as the SDK's would.
type slowPages struct {
	pages int
	wait  time.Duration
}

func (f slowPages) NewListBlobsFlatPager(*container.ListBlobsFlatOptions) *runtime.Pager[container.ListBlobsFlatResponse] {
	next := 0
	return runtime.NewPager(runtime.PagingHandler[container.ListBlobsFlatResponse]{
		More: func(r container.ListBlobsFlatResponse) bool { return r.NextMarker != nil },
		Fetcher: func(ctx context.Context, _ *container.ListBlobsFlatResponse) (container.ListBlobsFlatResponse, error) {
			select {
			case <-time.After(f.wait):
			case <-ctx.Done():
				return container.ListBlobsFlatResponse{}, ctx.Err()
			}
			name := "lease-" + strconv.Itoa(next)
			next++
			r := container.ListBlobsFlatResponse{}
			r.Segment = &container.BlobFlatListSegment{BlobItems: []*container.BlobItem{{Name: &name}}}
			if next < f.pages {
				m := strconv.Itoa(next)
				r.NextMarker = &m
			}
			return r, nil
		},
	})
}

// slowLister is the storage edge of a container whose pages are slowPages.
type slowLister struct {
	containerAPI // nil: a listing only
	pages        slowPages
}

func (f slowLister) listBlobs(ctx context.Context, prefix string, mode listMode) ([]listedBlob, answer, error) {
	return listPages(ctx, f.pages, prefix, mode)
}

// Each page of a listing has its own deadline: many pages, each answered
// late but within its deadline, make a listing longer than any one
// deadline, and whole; one page later than its deadline fails it.
func TestListDeadlinePerPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &Container{log: hclog.NewNullLogger(), api: slowLister{pages: slowPages{pages: 12, wait: pageTimeout - time.Second}}}
		begun := time.Now()
		listed, _, err := slow.List(t.Context(), "")
		if err != nil || len(listed) != 12 {
			t.Fatalf("12 slow pages: %d blobs, %v; want 12", len(listed), err)
		}
		if took := time.Since(begun); took <= pageTimeout {
			t.Fatalf("the listing took %s, not longer than a page's deadline: the test shows nothing", took)
		}
		late := &Container{log: hclog.NewNullLogger(), api: slowLister{pages: slowPages{pages: 2, wait: pageTimeout + time.Second}}}
		if _, _, err := late.List(t.Context(), ""); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a page later than its deadline: %v, want the deadline exceeded", err)
		}
	})
}
