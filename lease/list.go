package lease

// Listing: a container's blobs under a prefix, with lease state and
// metadata, each page with its own deadline; and View, one lease as its
// blobs show it (its slot blobs, pause marker, done markers, and the runs
// they record, each with its fate). list, status, history, check, break and
// the slot poll read a lease through it; the commands render it.

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// containerAPI is the storage edge for requests on the whole container,
// sent by azContainer or a test's fake; failures are *StorageError.
type containerAPI interface {
	// listBlobs lists the blobs under prefix with their lease state and
	// metadata, every page; the answer is the last page's. The mode may
	// skip names it would otherwise page through (listMode).
	listBlobs(ctx context.Context, prefix string, mode listMode) ([]listedBlob, answer, error)
	// listNames lists the distinct names under prefix up to the next
	// delimiter (List Blobs with a delimiter: the blob prefixes), every
	// page: one name per lease of the done markers, however many hosts.
	listNames(ctx context.Context, prefix, delimiter string) ([]string, error)
	accountInfo(ctx context.Context) (accountInfo, error)     // Get Account Information (azblob.go)
	containerInfo(ctx context.Context) (containerInfo, error) // Get Container Properties (azblob.go)
}

// listMode is what a listing may skip of the names under its prefix.
type listMode int

const (
	listAll listMode = iota
	// listSkipHelpers (prefix "") does not page through the helper blobs
	// (names.go): it stops where they begin and goes on after them
	// (startFrom).
	listSkipHelpers
	// listOwn (prefix NAME) lists lease NAME's own blobs, NAME and
	// NAME~…, without paging through the other names that begin with
	// NAME (NAME/…, NAME-…), which sort between them: once past NAME, the
	// first other name sends the listing on from NAME~ (startFrom). A
	// first page of a few names keeps a lease among many such names from
	// reading a page of thousands first.
	listOwn
)

// ownFirstPage is listOwn's first page's size: NAME, every slot, the pause
// and trigger markers and the deputy's place fit in it.
const ownFirstPage = MaxSlots + 8

// listedBlob is one blob of a listing.
type listedBlob struct {
	Name       string
	LeaseState string            // "" if absent
	ETag       string            // quoted, as a response header gives it
	Metadata   map[string]string // names lowercased; never nil
	Created    time.Time         // the blob's creation time; zero if not given
}

const (
	// maxListPages bounds a listing: at 5,000 blobs a page, half a million,
	// far beyond a container of leases; one that would go on is an error.
	maxListPages = 100
	// pageTimeout bounds each page of a listing on its own, not the
	// listing: a page of 5,000 blobs with their metadata is megabytes, and
	// a container of tens of thousands of blobs takes many pages. It is the
	// SDK's bound on one try, which a page's body is read within.
	pageTimeout = tryTimeout
)

func (a *azContainer) listBlobs(ctx context.Context, prefix string, mode listMode) ([]listedBlob, answer, error) {
	blobs, last, err := listPages(ctx, a.container, prefix, mode)
	return blobs, last, a.c.fail("list blobs", err)
}

func (a *azContainer) listNames(ctx context.Context, prefix, delimiter string) ([]string, error) {
	names, err := listPrefixes(ctx, a.container, prefix, delimiter)
	return names, a.c.fail("list blobs", err)
}

// pagerLister is the SDK container client's lister (a test serves pages).
type pagerLister interface {
	NewListBlobsFlatPager(o *container.ListBlobsFlatOptions) *runtime.Pager[container.ListBlobsFlatResponse]
}

// nextPage fetches pager's next page within pageTimeout of its own.
func nextPage[T any](ctx context.Context, pager *runtime.Pager[T]) (T, error) {
	pctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	return pager.NextPage(pctx)
}

// listPages is listBlobs on pl, its failures not yet mapped.
func listPages(ctx context.Context, pl pagerLister, prefix string, mode listMode) ([]listedBlob, answer, error) {
	opts := &container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Metadata: true}}
	if prefix != "" {
		opts.Prefix = &prefix
	}
	if mode == listOwn {
		opts.MaxResults = to.Ptr(int32(ownFirstPage))
	}
	var (
		blobs []listedBlob
		last  answer
		pages int
	)
	// list lists by opts until the pager ends, or until keep says stop.
	list := func(ctx context.Context, keep func(name string) (take, more bool)) error {
		for pager := pl.NewListBlobsFlatPager(opts); pager.More(); {
			if pages == maxListPages {
				return fmt.Errorf("lease: more than %d pages of blobs under %q", maxListPages, prefix)
			}
			pages++
			page, err := nextPage(ctx, pager)
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
	reached := false // the names to skip were reached, and skipped
	keep := func(string) (bool, bool) { return true, true }
	from := "" // where the listing goes on once they are reached
	switch {
	case mode == listSkipHelpers && prefix == "":
		from = afterHelpers
		keep = func(name string) (bool, bool) {
			reached = strings.HasPrefix(name, HelperPrefix)
			return !reached, !reached
		}
	case mode == listOwn && prefix != "":
		from = prefix + MarkerSep
		keep = func(name string) (bool, bool) {
			reached = name != prefix && name < from
			return !reached, !reached
		}
	}
	err := list(ctx, keep)
	if err == nil && reached {
		// The names from there on: a service that does not know startFrom
		// lists from the start again, and those before are skipped.
		opts.MaxResults = nil
		err = list(withStartFrom(ctx, from), func(name string) (bool, bool) { return name >= from, true })
	}
	if err != nil {
		return nil, answer{}, err
	}
	return blobs, last, nil
}

// prefixLister is the SDK container client's lister by delimiter.
type prefixLister interface {
	NewListBlobsHierarchyPager(delimiter string, o *container.ListBlobsHierarchyOptions) *runtime.Pager[container.ListBlobsHierarchyResponse]
}

// listPrefixes is listNames on pl, its failures not yet mapped.
func listPrefixes(ctx context.Context, pl prefixLister, prefix, delimiter string) ([]string, error) {
	var names []string
	pages := 0
	for pager := pl.NewListBlobsHierarchyPager(delimiter, &container.ListBlobsHierarchyOptions{Prefix: &prefix}); pager.More(); {
		if pages == maxListPages {
			return nil, fmt.Errorf("lease: more than %d pages of names under %q", maxListPages, prefix)
		}
		pages++
		page, err := nextPage(ctx, pager)
		if err != nil {
			return nil, err
		}
		if page.Segment == nil {
			continue
		}
		for _, p := range page.Segment.BlobPrefixes {
			if p != nil && p.Name != nil {
				names = append(names, *p.Name)
			}
		}
	}
	return names, nil
}

// startFromKey carries, in a request's context, where a listing starts.
type startFromKey struct{}

// withStartFrom makes the listings sent with ctx start at the first name at
// or after from (List Blobs' startFrom). azblob v1.8.0's pager drops
// ListBlobsFlatOptions.StartFrom, so startFromPolicy sends it.
func withStartFrom(ctx context.Context, from string) context.Context {
	return context.WithValue(ctx, startFromKey{}, from)
}

// startFromOf is where a listing sent with ctx starts; "" from the start.
func startFromOf(ctx context.Context) string {
	from, _ := ctx.Value(startFromKey{}).(string)
	return from
}

// startFromPolicy adds startFrom (withStartFrom) to a List Blobs request.
// It is one of the pipeline's per-call policies, which run before the
// per-try ones that sign, so a Shared Key signature covers it.
type startFromPolicy struct{}

func (startFromPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	if from := startFromOf(raw.Context()); from != "" && raw.URL.Query().Get("comp") == "list" {
		raw.URL.RawQuery += "&startFrom=" + url.QueryEscape(from)
	}
	return req.Next()
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
		b.Created = deref(p.CreationTime).UTC()
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
// container lists empty. Each page has its own deadline (pageTimeout), the
// listing as a whole only ctx's. Failures are *StorageError, or a done ctx's
// error.
func (c *Container) List(ctx context.Context, prefix string) ([]Listed, time.Time, error) {
	return c.list(ctx, prefix, listAll)
}

// ListLeases lists the whole container without paging through the helper
// blobs (names.go: done markers), however many accumulate.
func (c *Container) ListLeases(ctx context.Context) ([]Listed, time.Time, error) {
	return c.list(ctx, "", listSkipHelpers)
}

// ListOwn lists lease name's own blobs, name and name~…, as List does,
// without paging through the other blobs whose names begin with name
// (listOwn): one request, two when there are such blobs.
func (c *Container) ListOwn(ctx context.Context, name string) ([]Listed, time.Time, error) {
	return c.list(ctx, name, listOwn)
}

func (c *Container) list(ctx context.Context, prefix string, mode listMode) ([]Listed, time.Time, error) {
	blobs, ans, err := c.api.listBlobs(ctx, prefix, mode)
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
		p.etag, p.Created = b.ETag, b.Created
		out = append(out, Listed{Name: b.Name, Props: p})
	}
	return out, ans.Date, nil
}

// View is one lease as its blobs show it.
type View struct {
	Name      string
	URL       string    // the blob NAME's URL (slot 0), without any secret
	Slots     []Slot    // the slot blobs that exist, by slot; slot 0 may be missing
	SlotCount int       // N: the largest count any slot records, or one more than the highest slot seen (1 if none)
	Pause     *Pause    // the pause marker; nil if none (it may have run out: see Paused)
	Trigger   *Trigger  // the trigger marker; nil if none (it may have run: see PendingTrigger)
	Deputy    *Deputy   // the waiting follower that stands by (deputy.go); nil if none
	DoneHosts []string  // hosts with a done marker, sorted
	Date      time.Time // the service's Date of the reads
}

// Slot is one slot blob of a lease.
type Slot struct {
	Index int
	URL   string
	Props *Properties
}

// Slot returns slot i; a slot whose blob does not exist reads as absent.
func (v *View) Slot(i int) Slot {
	for _, s := range v.Slots {
		if s.Index == i {
			return s
		}
	}
	s := Slot{Index: i, Props: &Properties{State: StateAbsent, Metadata: map[string]string{}, Date: v.Date}}
	if i == 0 {
		s.URL = v.URL
	}
	return s
}

// Held is how many slots are held (leased or breaking).
func (v *View) Held() int {
	n := 0
	for _, s := range v.Slots {
		if s.Props.State.Held() {
			n++
		}
	}
	return n
}

// Paused is the pause in force at the view's Date; nil if none.
func (v *View) Paused() *Pause {
	if v.Pause.Active(v.Date) {
		return v.Pause
	}
	return nil
}

// Runs are the runs the slots record, newest start first (ties: by slot).
func (v *View) Runs() []Run {
	var all []Run
	for _, s := range v.Slots {
		all = append(all, ReadHistory(s.Props.Metadata, s.Props.State.Held())...)
	}
	slices.SortStableFunc(all, func(a, b Run) int { return cmp.Compare(b.Start.Unix(), a.Start.Unix()) })
	return all
}

// Fate names how run r of this lease ended, or that it runs: from its
// record, and for the run a slot's lastrun* keys describe without an end,
// from what the view knows besides: its slot's lease state (leased:
// running; breaking or broken: broken by an operator) and the pause in
// force (a drain that began after the run started: drained). status, list
// and history show a run through it, so that they say the same.
func (v *View) Fate(r Run) Fate {
	current := false
	state := StateAbsent
	for _, s := range v.Slots {
		if last := s.Props.LastRun; last != nil && last.same(r) {
			current, state = true, s.Props.State
			break
		}
	}
	p := v.Paused()
	drain := p != nil && p.Drain && !p.Since.Before(r.Start)
	return fateOf(r, current, state, drain)
}

// LastSuccess is the newest success the slots record; nil if none.
func (v *View) LastSuccess() *Run {
	var best *Run
	for _, s := range v.Slots {
		if r := LastSuccess(s.Props.Metadata); r != nil && (best == nil || r.End.After(best.End)) {
			best = r
		}
	}
	return best
}

// Group groups a listing's blobs by lease, sorted by name, without NAME~x
// that leaderrun does not write; a pause or done marker lists its lease even
// with no slot blob. date: the listing's; url: a blob's URL, no secrets
// (nil: none).
func Group(listed []Listed, date time.Time, url func(blob string) string) []View {
	if url == nil {
		url = func(string) string { return "" }
	}
	byName := map[string]*View{}
	get := func(name string) *View {
		if byName[name] == nil {
			byName[name] = &View{Name: name, URL: url(name), SlotCount: 1, Date: date}
		}
		return byName[name]
	}
	for _, b := range listed {
		n := ParseBlobName(b.Name)
		switch n.Kind {
		case KindSlot:
			v := get(n.Lease)
			v.Slots = append(v.Slots, Slot{Index: n.Slot, URL: url(b.Name), Props: b.Props})
		case KindPause:
			get(n.Lease).Pause = pauseOf(b.Props.Metadata)
		case KindTrigger:
			get(n.Lease).Trigger = triggerOf(b.Props.Metadata)
		case KindDeputy:
			get(n.Lease).Deputy = DeputyOf(b.Props)
		case KindDone:
			v := get(n.Lease)
			if !slices.Contains(v.DoneHosts, n.Host) { // a host done before and after an upgrade
				v.DoneHosts = append(v.DoneHosts, n.Host)
			}
		}
	}
	out := make([]View, 0, len(byName))
	for _, v := range byName {
		slices.SortFunc(v.Slots, func(a, b Slot) int { return cmp.Compare(a.Index, b.Index) })
		slices.Sort(v.DoneHosts)
		if len(v.Slots) > 0 {
			v.SlotCount = v.Slots[len(v.Slots)-1].Index + 1
		}
		// Every slot records the count (slot 0 may not exist yet): the
		// largest wins.
		for _, s := range v.Slots {
			v.SlotCount = max(v.SlotCount, recordedSlots(s.Props.Metadata))
		}
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b View) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// viewOf is lease name's view in a listing of its prefix (other leases too);
// with nothing of it listed, one slot, absent.
func viewOf(name string, listed []Listed, date time.Time, url func(string) string) *View {
	for _, v := range Group(listed, date, url) {
		if v.Name == name {
			return &v
		}
	}
	v := &View{Name: name, SlotCount: 1, Date: date}
	if url != nil {
		v.URL = url(name)
	}
	return v
}

// doneListings bounds how many listings of done markers Views sends at once.
const doneListings = 8

// Views lists every lease of the container (ListLeases) as a View, done
// hosts included: the names of the leases that have done markers come from
// one listing by delimiter (one name per lease, not per host), then each
// such lease's markers from a listing of its own, a few at a time, so that
// the helper blobs are never paged through as a whole.
func (c *Container) Views(ctx context.Context) ([]View, error) {
	listed, date, err := c.ListLeases(ctx)
	if err != nil {
		return nil, err
	}
	done, err := c.doneMarkers(ctx)
	if err != nil {
		return nil, err
	}
	return Group(append(listed, done...), date, c.BlobURL), nil
}

// doneMarkers lists the done markers of every lease that has any.
func (c *Container) doneMarkers(ctx context.Context) ([]Listed, error) {
	prefixes, err := c.api.listNames(ctx, HelperPrefix+doneMarker, MarkerSep)
	if se := asStorageError(err); se != nil && se.kind == kindContainerMissing {
		return nil, nil
	} else if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	var (
		mu       sync.Mutex
		out      []Listed
		firstErr error
		wg       sync.WaitGroup
		slots    = make(chan struct{}, doneListings)
	)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, p := range prefixes {
		if !strings.HasSuffix(p, MarkerSep) {
			continue // a blob named ~done/x with no host: not a marker
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			listed, _, err := c.List(lctx, p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
				cancel()
			}
			out = append(out, listed...)
		})
	}
	wg.Wait()
	if firstErr != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return out, firstErr
}

// View reads this lease: one read of the blob NAME (slot 0), one listing of
// the prefix NAME~ (the other slots, the pause marker) and one of its done
// markers, so that a lease never pages through other blobs whose names
// begin with NAME (NAME/…). Credentials that may read the blob NAME but not
// list (a SAS for that blob alone) get the read of slot 0 alone, without
// pause or done hosts; credentials refused the read too get that refusal.
func (b *Blob) View(ctx context.Context) (*View, error) {
	p, err := b.Properties(ctx)
	if err != nil {
		return nil, err
	}
	var listed []Listed
	if p.Exists && !p.Directory {
		listed = append(listed, Listed{Name: b.name, Props: p})
	}
	siblings, date, err := b.c.List(ctx, b.name+MarkerSep)
	if denied(err) {
		b.c.log.Info("may not list the lease's blobs; reading the lease blob alone", "error", err)
		return viewOf(b.name, listed, p.Date, b.c.BlobURL), nil
	}
	if err != nil {
		return nil, err
	}
	done, _, err := b.c.List(ctx, DonePrefix(b.name))
	if err != nil {
		return nil, err
	}
	listed = append(append(listed, siblings...), done...)
	if p.Date.IsZero() {
		p.Date = date
	}
	return viewOf(b.name, listed, p.Date, b.c.BlobURL), nil
}
