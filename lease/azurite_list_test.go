package lease

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// TestListAndSiblings: a lease's slots and markers, addressed through
// Container.Blob, come back from one listing of the lease's name with their lease
// state and metadata, grouped by ParseBlobName; a missing container lists
// as empty; lease names may not contain the marker separator.
func TestListAndSiblings(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "jobs/a"}
	c := azuriteBlob(t, cfg)

	if got, _, err := c.c.List(ctx, ""); err != nil || len(got) != 0 {
		t.Fatalf("listing a missing container = %v, %v; want empty, nil", got, err)
	}

	names := []string{SlotBlob("jobs/a", 0), SlotBlob("jobs/a", 2), PauseBlob("jobs/a"), DoneBlob("jobs/a", "vm-1"), "jobs/ab"}
	for i, n := range names {
		s, err := c.c.Blob(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ensureBlob(ctx, i == 0); err != nil {
			t.Fatalf("creating %s: %v", n, err)
		}
	}
	slot2, _ := c.c.Blob(SlotBlob("jobs/a", 2))
	id := "0f9c2e4a-8d5b-4f0e-9a61-3c7d2b1e5f48"
	if _, err := slot2.api.acquireLease(ctx, id, 15); err != nil {
		t.Fatal(err)
	}
	if _, err := slot2.api.setMetadata(ctx, id, "", map[string]string{"holder": "vm-2", "term": "4"}); err != nil {
		t.Fatal(err)
	}

	got, date, err := c.c.List(ctx, "jobs/a")
	if err != nil {
		t.Fatal(err)
	}
	if date.IsZero() {
		t.Error("the listing's Date is zero")
	}
	// The done marker lives apart, under the helper prefix.
	want := map[string]BlobKind{"jobs/a": KindSlot, "jobs/a~slot-2": KindSlot, "jobs/a~pause": KindPause, "jobs/ab": KindSlot}
	if len(got) != len(want) {
		t.Fatalf("listed %d blobs, want %d: %+v", len(got), len(want), got)
	}
	for _, l := range got {
		kind, ok := want[l.Name]
		if !ok || ParseBlobName(l.Name).Kind != kind {
			t.Errorf("listed %q (kind %v), not expected", l.Name, ParseBlobName(l.Name).Kind)
		}
		if l.Name == "jobs/a~slot-2" {
			if l.Props.State != StateLeased || l.Props.Holder != "vm-2" || l.Props.Term != 4 || l.Props.etag == "" {
				t.Errorf("slot 2 = %+v; want leased by vm-2, term 4, with an ETag", l.Props)
			}
		} else if l.Props.State != StateAvailable {
			t.Errorf("%s: state %s, want available", l.Name, l.Props.State)
		}
	}

	if done, _, err := c.c.List(ctx, DonePrefix("jobs/a")); err != nil || len(done) != 1 ||
		ParseBlobName(done[0].Name) != (BlobName{Lease: "jobs/a", Kind: KindDone, Host: "vm-1"}) {
		t.Errorf("the done markers of jobs/a: %+v, %v; want vm-1's", done, err)
	}

	_, err = NewLeaseBlob(ClientConfig{ConnectionString: cs, Container: cfg.Container, Blob: "a~b"})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Errorf("a lease name with %q: %v, want a *ConfigError", MarkerSep, err)
	}
}

// The crowded container, made once per test run (TestAzuriteCrowdedContainer)
// for the tests that list it: a lease "data" of three slots (slot 1 never
// used), with a pause marker and two done markers; crowdData unrelated
// blobs under "data/" (the bare prefix "data" lists them all); the done
// markers of crowdDone hosts of the lease "bulk", under the helper prefix;
// and a lease whose name sorts after the helper blobs.
const (
	crowdData = 12000
	crowdDone = 8000
	lateLease = "\u00e9t\u00e9" // sorts after "~"
)

// TestAzuriteCrowdedContainer makes the crowded container once, 32 blobs
// at a time (the emulator makes about 500 a second on two cores: half a
// minute), and runs the tests that list it. -short skips them. It has an
// emulator of its own: tens of thousands of blobs slow the emulator down for
// every later test (it scans them all for a listing with a prefix), and it
// removes a container's blobs in one step that grows with the square of
// their count, answering nobody meanwhile.
func TestAzuriteCrowdedContainer(t *testing.T) {
	azuriteConnectionString(t)
	if testing.Short() {
		t.Skip("-short: no container of tens of thousands of blobs")
	}
	cs := privateAzurite(t)
	name := uniqueContainer(t)
	begun := time.Now()
	if err := fillCrowd(cs, name); err != nil {
		t.Fatalf("making the crowded container: %v", err)
	}
	t.Logf("%d blobs made in %s", crowdData+crowdDone+8, time.Since(begun).Round(time.Millisecond))
	var perPage time.Duration // how long the emulator takes for a page here
	t.Run("view of a crowded prefix", func(t *testing.T) { testViewOfACrowdedPrefix(t, cs, name) })
	t.Run("the slot poll's listing of a crowded prefix", func(t *testing.T) { testListOwnOfACrowdedPrefix(t, cs, name) })
	t.Run("list leases starts after the helpers", func(t *testing.T) { perPage = testListLeasesStartsAfterTheHelpers(t, cs, name) })
	t.Run("views have the done hosts", func(t *testing.T) { testViewsHaveTheDoneHosts(t, cs, name) })
	t.Run("slow pages", func(t *testing.T) { testListSlowPages(t, cs, name, perPage) })
}

// privateAzurite starts an emulator for t alone (scripts/azurite.sh, in a
// state directory of its own) and stops it when t ends. Without one (no
// Azurite installed) t is skipped, or under CI=true fails.
func privateAzurite(t *testing.T) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AZURITE_STATE_DIR", filepath.Join(t.TempDir(), "azurite"))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	e, err := testenv.StartAzurite(ctx, root, t.TempDir())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("an emulator of this test's own: %v", err)
		}
		t.Skipf("no emulator of this test's own: %v", err)
	}
	t.Cleanup(e.Stop)
	return e.ConnString
}

func fillCrowd(cs, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cc, err := container.NewClientFromConnectionString(cs, name, nil)
	if err != nil {
		return err
	}
	if _, err := cc.Create(ctx, nil); err != nil {
		return err
	}
	put := func(blob string, md map[string]string) error {
		meta := map[string]*string{}
		for k, v := range md {
			meta[k] = &v
		}
		_, err := cc.NewBlockBlobClient(blob).Upload(ctx, streaming.NopCloser(bytes.NewReader(nil)), &blockblob.UploadOptions{Metadata: meta})
		return err
	}
	now := time.Now().UTC()
	slot := map[string]string{"holder": "vm-1", "term": "4", "slots": "3", "lastrunholder": "vm-1", "lastrunterm": "4",
		"lastrunstart": formatTime(now.Add(-time.Hour)), "lastrunend": formatTime(now.Add(-50 * time.Minute)), "lastexit": "0"}
	named := map[string]map[string]string{
		"data":                     slot,
		SlotBlob("data", 2):        {"holder": "vm-3", "term": "2", "slots": "3"},
		PauseBlob("data"):          {"reason": "crowded", "since": formatTime(now.Add(-time.Minute))},
		DoneBlob("data", "vm-1"):   nil,
		DoneBlob("data", "vm-2"):   nil,
		lateLease:                  {"holder": "vm-9", "term": "1"},
		"data-sibling":             {"holder": "vm-8", "term": "1"},
		legacyDoneBlob("old", "h"): nil,
	}
	names := make(chan string)
	go func() {
		defer close(names)
		for n := range named {
			names <- n
		}
		for i := range crowdData {
			names <- fmt.Sprintf("data/%07d", i)
		}
		for i := range crowdDone {
			names <- DoneBlob("bulk", fmt.Sprintf("host-%06d", i))
		}
	}()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range 32 {
		wg.Go(func() {
			for n := range names {
				if err := put(n, named[n]); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", n, err))
					mu.Unlock()
					cancel()
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// lists counts the List Blobs requests that reached proxy.
func lists(p *faultproxy.Proxy) int64 { return p.Counts().ByOp[faultproxy.OpList] }

// status of a lease with tens of thousands of unrelated blobs under NAME/
// reads the blob NAME and lists NAME~ and its done markers: three
// requests, whatever NAME/… holds, and the view is whole.
func testViewOfACrowdedPrefix(t *testing.T, cs, name string) {
	proxy, pcs := faultproxy.Start(t, cs)
	b := azuriteBlob(t, ClientConfig{ConnectionString: pcs, Container: name, Blob: "data"})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	begun := time.Now()
	v, err := b.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status of data: %d requests in %s", proxy.Counts().Reads, time.Since(begun).Round(time.Millisecond))
	if c := proxy.Counts(); c.ByOp[faultproxy.OpGetProperties] != 1 || lists(proxy) != 2 || c.Reads != 3 {
		t.Errorf("requests: %+v; want one read of data, one listing of data~ and one of its done markers", c)
	}
	if v.SlotCount != 3 || v.Slot(0).Props.Holder != "vm-1" || v.Slot(2).Props.Holder != "vm-3" || v.Slot(1).Props.State != StateAbsent {
		t.Errorf("slots: %d, %+v; want 3, slot 0 vm-1's, slot 2 vm-3's, slot 1 absent", v.SlotCount, v.Slots)
	}
	if v.Paused() == nil || v.Paused().Reason != "crowded" || strings.Join(v.DoneHosts, ",") != "vm-1,vm-2" {
		t.Errorf("pause %+v, done hosts %v; want crowded, vm-1 and vm-2", v.Pause, v.DoneHosts)
	}
	if v.Slot(0).Props.Created.IsZero() || v.Date.IsZero() {
		t.Errorf("slot 0 created %v, date %v: want both from the read", v.Slot(0).Props.Created, v.Date)
	}
}

// The slot poll's listing of lease data, among tens of thousands of blobs
// under data/, reads two pages, not the whole prefix: the first of a few
// names, which meets data-sibling after data, and one from data~.
func testListOwnOfACrowdedPrefix(t *testing.T, cs, name string) {
	proxy, pcs := faultproxy.Start(t, cs)
	c, err := NewContainer(ClientConfig{ConnectionString: pcs, Container: name})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	begun := time.Now()
	listed, _, err := c.ListOwn(ctx, "data")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the slot poll's listing of data: %d blobs in %d pages, %s", len(listed), lists(proxy), time.Since(begun).Round(time.Millisecond))
	var names []string
	for _, l := range listed {
		names = append(names, l.Name)
	}
	if got, want := strings.Join(names, " "), strings.Join([]string{"data", PauseBlob("data"), SlotBlob("data", 2)}, " "); got != want {
		t.Errorf("listed %q, want %q", got, want)
	}
	if lists(proxy) != 2 {
		t.Errorf("%d listing requests, want 2", lists(proxy))
	}
}

// list does not page through the helper blobs: it stops where they begin
// and asks the service for the names after them (startFrom, which azblob
// v1.8.0's pager would drop), so the tens of thousands of done markers cost
// the one page it met them on, and the lease after them is still listed.
// The emulator checks the Shared Key signature, which must cover startFrom.
func testListLeasesStartsAfterTheHelpers(t *testing.T, cs, name string) (perPage time.Duration) {
	proxy, pcs := faultproxy.Start(t, cs)
	c, err := NewContainer(ClientConfig{ConnectionString: pcs, Container: name})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	begun := time.Now()
	listed, _, err := c.ListLeases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(begun)
	t.Logf("list: %d blobs in %d pages, %s", len(listed), lists(proxy), took.Round(time.Millisecond))
	// The names before the helpers (data, data-sibling, data/…, data~pause,
	// data~slot-2, old~done/h) fill pages up to the one that meets the
	// first helper name; then one page from startFrom.
	before := crowdData + 5
	if want := int64(before/5000 + 1 + 1); lists(proxy) != want {
		t.Errorf("%d listing requests, want %d: the pages up to the helper blobs and one after them", lists(proxy), want)
	}
	var late, helpers int
	for _, l := range listed {
		switch {
		case l.Name == lateLease:
			late++
		case strings.HasPrefix(l.Name, HelperPrefix):
			helpers++
		}
	}
	if late != 1 || helpers != 0 || len(listed) != before+1 {
		t.Errorf("listed %d blobs (%d after the helpers, %d helpers), want %d, the late lease once, no helper", len(listed), late, helpers, before+1)
	}
	return took / time.Duration(max(lists(proxy), 1))
}

// list shows the done hosts of every lease that has any, as status does,
// without paging through the helper blobs as a whole: one listing by
// delimiter names the leases with markers, then each lease's markers.
func testViewsHaveTheDoneHosts(t *testing.T, cs, name string) {
	c, err := NewContainer(ClientConfig{ConnectionString: cs, Container: name})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	begun := time.Now()
	views, err := c.Views(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("list's views, done hosts included: %d leases in %s", len(views), time.Since(begun).Round(time.Millisecond))
	byName := map[string]View{}
	for _, v := range views {
		byName[v.Name] = v
	}
	if n := len(byName["bulk"].DoneHosts); n != crowdDone {
		t.Errorf("bulk: %d done hosts, want %d", n, crowdDone)
	}
	if got := byName["old"].DoneHosts; len(got) != 1 || got[0] != "h" {
		t.Errorf("old (a marker of an earlier release): done hosts %v, want h", got)
	}
	if _, ok := byName[lateLease]; !ok {
		t.Errorf("the lease after the helper blobs is missing")
	}

	// The lease "data" as list shows it is the lease as status shows it.
	b := azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: name, Blob: "data"})
	one, err := b.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := byName["data"]
	if strings.Join(listed.DoneHosts, ",") != strings.Join(one.DoneHosts, ",") || listed.SlotCount != one.SlotCount ||
		len(listed.Slots) != len(one.Slots) || listed.URL != one.URL || (listed.Pause == nil) != (one.Pause == nil) {
		t.Errorf("list's view of data %+v\nstatus's %+v", listed, *one)
	}
	for i := range min(len(listed.Slots), len(one.Slots)) {
		l, s := listed.Slots[i], one.Slots[i]
		if l.Index != s.Index || l.URL != s.URL || l.Props.State != s.Props.State || !maps.Equal(l.Props.Metadata, s.Props.Metadata) ||
			!l.Props.Created.Equal(s.Props.Created) {
			t.Errorf("slot %d: list %+v, status %+v", l.Index, *l.Props, *s.Props)
		}
	}
}

// A slow service answers every page late, each within its own deadline:
// a listing of many pages takes longer than one page's deadline, and is
// still whole. perPage is how long a page takes the emulator here; one too
// slow to answer a page late within its deadline (a loaded machine, -race)
// shows nothing, and the test says so and skips.
func testListSlowPages(t *testing.T, cs, name string, perPage time.Duration) {
	proxy, pcs := faultproxy.Start(t, cs)
	c, err := NewContainer(ClientConfig{ConnectionString: pcs, Container: name})
	if err != nil {
		t.Fatal(err)
	}
	const latency = 1500 * time.Millisecond
	if perPage == 0 || perPage+latency > pageTimeout*3/4 {
		t.Skipf("a page takes the emulator %s here: %s later would be too close to its deadline (%s)", perPage.Round(time.Millisecond), latency, pageTimeout)
	}
	proxy.Set(faultproxy.Mode{Latency: latency})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	begun := time.Now()
	listed, _, err := c.ListLeases(ctx)
	if err != nil {
		t.Fatalf("after %s: %v", time.Since(begun).Round(time.Millisecond), err)
	}
	t.Logf("list, every page %s late: %d pages in %s", latency, lists(proxy), time.Since(begun).Round(time.Millisecond))
	if n := lists(proxy); time.Duration(n)*latency <= requestTimeout {
		t.Errorf("%d pages of %s: not longer than one request's deadline (%s), so this test shows nothing", n, latency, requestTimeout)
	}
	if len(listed) != crowdData+6 {
		t.Errorf("listed %d blobs, want %d", len(listed), crowdData+6)
	}
}

// Credentials the service refuses the read too (a wrong key) get that one
// refusal, with no word of a fallback; credentials that may read the lease
// blob but not list (a SAS for that blob alone) get the read of slot 0,
// said once at INFO.
func TestAzuriteViewRefused(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	name := uniqueContainer(t)
	admin := azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: name, Blob: "job"})
	if err := admin.ensureBlob(ctx, true); err != nil {
		t.Fatal(err)
	}
	endpoint, account, key := connField(cs, "BlobEndpoint"), connField(cs, "AccountName"), connField(cs, "AccountKey")
	logged := func(cfg ClientConfig) (*Blob, *bytes.Buffer) {
		var buf bytes.Buffer
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
		cfg.Container, cfg.Blob = name, "job"
		return azuriteBlob(t, cfg), &buf
	}

	wrong := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 64))
	b, log := logged(ClientConfig{Account: account, AccountKey: wrong, Endpoint: endpoint})
	_, err := b.View(ctx)
	if se := asStorageError(err); se == nil || se.StatusCode != http.StatusForbidden {
		t.Errorf("a wrong key: %v, want 403", err)
	}
	if log.Len() != 0 {
		t.Errorf("a wrong key logged %q, want nothing (its one line is the caller's)", log.String())
	}

	cred, err := blob.NewSharedKeyCredential(account, key)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour).UTC(),
		Permissions: (&sas.BlobPermissions{Read: true}).String(), ContainerName: name, BlobName: "job"}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	b, log = logged(ClientConfig{SASToken: qp.Encode(), Endpoint: endpoint})
	v, err := b.View(ctx)
	if err != nil || len(v.Slots) != 1 || v.Slot(0).Props.State != StateAvailable {
		t.Fatalf("a blob SAS: %+v, %v; want slot 0, available", v, err)
	}
	if n := strings.Count(log.String(), "may not list the lease's blobs"); n != 1 {
		t.Errorf("a blob SAS logged %q, want the fallback said once", log.String())
	}
}

// connField is the value of key in a connection string.
func connField(cs, key string) string {
	for _, part := range strings.Split(cs, ";") {
		if k, v, ok := strings.Cut(part, "="); ok && strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

// A run cut by an operator reads so: broken while its lease breaks, drained
// as long as the drain's pause is in force, the holder's release after its
// stop notwithstanding; a plain break, once released, reads as any loss.
func TestAzuriteFateOfACutRun(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	for _, tc := range []struct {
		name                   string
		drain                  bool
		breaking, afterRelease string
	}{
		{"break", false, "broken by an operator", "lost its lease"},
		{"pause --drain", true, "drained", "drained"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c := azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "job"})
			l, err := azuriteElector(t, c, "vm-1", nil).Acquire(ctx, WaitOptions{NoWait: true})
			if err != nil {
				t.Fatal(err)
			}
			fate := func() string {
				t.Helper()
				v, err := c.View(ctx)
				if err != nil {
					t.Fatal(err)
				}
				runs := v.Runs()
				if len(runs) != 1 {
					t.Fatalf("runs %+v, want one", runs)
				}
				return v.Fate(runs[0]).String()
			}
			if got := fate(); got != "running" {
				t.Errorf("held: %q, want running", got)
			}
			if tc.drain {
				_, date, err := c.ReadPause(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.WritePause(ctx, Pause{Reason: "moving", Since: date, Drain: true}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.BreakLease(ctx, BreakAtPeriodEnd); err != nil {
				t.Fatal(err)
			}
			if got := fate(); got != tc.breaking {
				t.Errorf("breaking: %q, want %q", got, tc.breaking)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if got := fate(); got != tc.afterRelease {
				t.Errorf("released: %q, want %q", got, tc.afterRelease)
			}
		})
	}
}
