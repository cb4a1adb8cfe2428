package lease

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// pagedContainer serves a container's names in pages of two, in name
// order, honouring startFrom or not, and counts the pages it serves.
type pagedContainer struct {
	names         []string
	honourStartAt bool
	served        []string // every name served, in order
	pages         int
}

func (f *pagedContainer) NewListBlobsFlatPager(o *container.ListBlobsFlatOptions) *runtime.Pager[container.ListBlobsFlatResponse] {
	names := f.names
	if f.honourStartAt && o.StartFrom != nil {
		var from []string
		for _, n := range names {
			if n >= *o.StartFrom {
				from = append(from, n)
			}
		}
		names = from
	}
	next := 0
	return runtime.NewPager(runtime.PagingHandler[container.ListBlobsFlatResponse]{
		More: func(r container.ListBlobsFlatResponse) bool { return r.NextMarker != nil },
		Fetcher: func(context.Context, *container.ListBlobsFlatResponse) (container.ListBlobsFlatResponse, error) {
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

// A listing of the leases stops where the helper blobs begin and goes on
// after them: with a service that honours startFrom, no page of helper
// blobs alone is ever fetched; with one that does not, the names after
// them are still found. Either way no helper blob is returned.
func TestListLeasesSkipsTheHelperBlobs(t *testing.T) {
	names := []string{"alpha", "beta", "~done/alpha~vm-1", "~done/alpha~vm-2", "~done/beta~vm-1", "~done/beta~vm-2", "\u00e9t\u00e9", "\u00fcber"}
	for _, honour := range []bool{true, false} {
		f := &pagedContainer{names: names, honourStartAt: honour}
		got, _, err := listPages(context.Background(), f, "", true)
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
