package lease

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// Tests of leaderrun's storage requests (azblob.go) against the emulator,
// cross-checked with the Azure SDK's own clients where it helps.

// Blob names with spaces, reserved URL characters, '%' and unicode: each is
// acquired by name with a key and (for some) a SAS, and the SDK finds exactly
// that name with leaderrun's metadata.
func TestAzuriteOddBlobNames(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	parsed, err := parseConnectionString(cs)
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueContainer(t)
	names := []string{
		"with space/run 1",
		"plus+sign",
		"percent%41not-an-A",
		"percent%",
		"hash#tag",
		"question?mark=1&x=2",
		"semi;colon,comma",
		"at@colon:dollar$",
		"quote'paren(star)*!",
		"tilde-caret^pipe|backtick`",
		`brackets[]{}<>"dq"`,
		"ünïcødé/日本語/🙂",
		"deep/a/b/c/d",
		"trailing space ",
	}
	for i, blobName := range names {
		c := azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: name, Blob: blobName})
		identity := fmt.Sprintf("vm-%d", i)
		l, err := azuriteElector(t, c, identity, nil).Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			t.Errorf("%q: acquire: %v", blobName, err)
			continue
		}
		if err := l.Release(ctx); err != nil {
			t.Errorf("%q: release: %v", blobName, err)
		}
		props, err := sdkBlob(t, cs, name, blobName).GetProperties(ctx, nil)
		if err != nil {
			t.Errorf("%q: the SDK cannot read it: %v", blobName, err)
			continue
		}
		if h := metaValue(props.Metadata, "holder"); h != identity {
			t.Errorf("%q: the SDK reads holder %q, want %q", blobName, h, identity)
		}
	}
	got := listBlobs(t, cs, name)
	if want := slices.Sorted(slices.Values(names)); !slices.Equal(slices.Sorted(maps.Keys(got)), want) {
		t.Errorf("stored names %q\nwant %q", slices.Sorted(maps.Keys(got)), want)
	}

	// A blob SAS is signed for the decoded name; leaderrun's escaped URL must
	// address the same blob.
	for _, blobName := range []string{"with space/run 1", "plus+sign", "hash#tag", "ünïcødé/日本語/🙂"} {
		token := blobSAS(t, parsed, name, blobName, sas.BlobPermissions{Read: true, Add: true, Create: true, Write: true})
		c := azuriteBlob(t, ClientConfig{SASToken: token, Endpoint: parsed.endpoint, Container: name, Blob: blobName})
		l, err := azuriteElector(t, c, "vm-sas", nil).Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			t.Errorf("%q with a SAS: %v", blobName, err)
			continue
		}
		if err := l.Release(ctx); err != nil {
			t.Errorf("%q with a SAS: release: %v", blobName, err)
		}
	}
}

func blobSAS(t *testing.T, parsed credentialSource, containerName, blobName string, perms sas.BlobPermissions) string {
	t.Helper()
	cred, err := blob.NewSharedKeyCredential(parsed.account, parsed.key)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.BlobSignatureValues{
		Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour).UTC(),
		Permissions: perms.String(), ContainerName: containerName, BlobName: blobName,
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return qp.Encode()
}

// listBlobs lists a container with the SDK: name → metadata, with the
// metadata names as stored (the listing's XML keeps their case).
func listBlobs(t *testing.T, cs, containerName string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	pager := sdkContainer(t, cs, containerName).NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
		Include: container.ListBlobsInclude{Metadata: true},
	})
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Segment.BlobItems {
			md := map[string]string{}
			for k, v := range item.Metadata {
				if v != nil {
					md[k] = *v
				}
			}
			out[*item.Name] = md
		}
	}
	return out
}

func metaValue(md map[string]*string, key string) string {
	for k, v := range md {
		if strings.EqualFold(k, key) && v != nil {
			return *v
		}
	}
	return ""
}

// Metadata written by leaderrun is what the SDK reads, names lowercased as
// stored, values as sent; metadata written by the SDK is what leaderrun
// reads. The names mix '_', digits and letters, whose order in the signed
// headers is not byte order.
func TestAzuriteMetadataRoundTrip(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	name := uniqueContainer(t)
	c := azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: name, Blob: "md"})
	if err := c.ensureBlob(ctx, true); err != nil {
		t.Fatal(err)
	}
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	if _, err := c.api.acquireLease(ctx, id, 15); err != nil {
		t.Fatal(err)
	}
	written := map[string]string{
		"holder": "vm 1", "term": "7", "k_1": "underscore", "k1": "digit", "k10": "ten", "k9": "nine",
		"ka": "letter", "k": "short", "_lead": "x", "spaces": "two  inner  spaces", "punct": `a,b;c="d" (e)`,
	}
	if _, err := c.api.setMetadata(ctx, id, "", written); err != nil {
		t.Fatalf("set metadata: %v", err)
	}
	if got := listBlobs(t, cs, name)["md"]; !maps.Equal(got, written) {
		t.Errorf("stored (SDK listing) %v\nwant %v", got, written)
	}
	props, err := sdkBlob(t, cs, name, "md").GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range written {
		if got := metaValue(props.Metadata, k); got != v {
			t.Errorf("SDK reads %s = %q, want %q", k, got, v)
		}
	}
	p := mustProps(t, c)
	if !maps.Equal(p.Metadata, written) || p.State != StateLeased || p.Holder != "vm 1" || p.Term != 7 {
		t.Errorf("leaderrun reads %+v", p)
	}

	// The SDK writes mixed-case names; leaderrun reads them lowercased.
	v1, v2 := "From SDK", "x"
	if _, err := sdkBlob(t, cs, name, "md").SetMetadata(ctx, map[string]*string{"Mixed_Case1": &v1, "Term": &v2},
		&blob.SetMetadataOptions{AccessConditions: &blob.AccessConditions{
			LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: ptr(id)}}}); err != nil {
		t.Fatal(err)
	}
	p = mustProps(t, c)
	if want := map[string]string{"mixed_case1": "From SDK", "term": "x"}; !maps.Equal(p.Metadata, want) {
		t.Errorf("leaderrun reads %v, want %v", p.Metadata, want)
	}
	if _, err := c.api.releaseLease(ctx, id); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// A missing container and a missing blob are told apart, by HEAD (which has
// no body: the code comes from x-ms-error-code) and by the lease operations.
func TestAzuriteMissingContainerOrBlob(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	c := azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "a/b"})
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	calls := []struct {
		name string
		do   func() error
	}{
		{"get properties", func() error { _, err := c.api.getProperties(ctx); return err }},
		{"acquire", func() error { _, err := c.api.acquireLease(ctx, id, 15); return err }},
		{"renew", func() error { _, err := c.api.renewLease(ctx, id); return err }},
		{"set metadata", func() error { _, err := c.api.setMetadata(ctx, id, "", nil); return err }},
	}
	check := func(want errKind, code string) {
		t.Helper()
		for _, call := range calls {
			se := c.c.mapError(call.name, call.do())
			if se.StatusCode != http.StatusNotFound || se.kind != want || se.Code != code {
				t.Errorf("%s: %v (kind %d), want 404 %s", call.name, se, se.kind, code)
			}
		}
		if p := mustProps(t, c); p.Exists || p.State != StateAbsent {
			t.Errorf("Properties: %+v", p)
		}
		if _, err := c.BreakLease(ctx, 0); !errors.Is(err, ErrNotLeased) {
			t.Errorf("Break: %v, want ErrNotLeased", err)
		}
	}
	check(kindContainerMissing, codeContainerNotFound)
	if _, err := c.api.createContainer(ctx); err != nil {
		t.Fatal(err)
	}
	check(kindBlobMissing, codeBlobNotFound)
	if se := c.c.mapError("create container", func() error { _, err := c.api.createContainer(ctx); return err }()); se.kind != kindExists {
		t.Errorf("create container again: %v, want ContainerAlreadyExists", se)
	}
}

// Put Blob with If-None-Match: * creates the blob once, however many
// clients race, and never overwrites content.
func TestAzuriteCreateBlobRace(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	name := uniqueContainer(t)
	const n = 8
	clients := make([]*Blob, n)
	for i := range clients {
		clients[i] = azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: name, Blob: "race"})
	}
	if _, err := clients[0].api.createContainer(ctx); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, c := range clients {
		wg.Go(func() {
			<-start
			_, errs[i] = c.api.createBlob(ctx)
		})
	}
	close(start)
	wg.Wait()
	created := 0
	for i, err := range errs {
		if err == nil {
			created++
			continue
		}
		se := clients[i].c.mapError("create blob", err)
		if se.kind != kindExists && se.StatusCode != http.StatusPreconditionFailed {
			t.Errorf("client %d: %v, want 409 BlobAlreadyExists or 412", i, se)
		}
		if err := clients[i].ensureBlob(ctx, false); err != nil {
			t.Errorf("client %d: ensureBlob on an existing blob: %v", i, err)
		}
	}
	if created != 1 {
		t.Errorf("%d clients created the blob, want 1", created)
	}

	bb := sdkBlob(t, cs, name, "precious")
	if _, err := bb.UploadBuffer(ctx, []byte("precious"), nil); err != nil {
		t.Fatal(err)
	}
	c := azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: name, Blob: "precious"})
	if se := c.c.mapError("create blob", func() error { _, err := c.api.createBlob(ctx); return err }()); se.kind != kindExists {
		t.Errorf("create over content: %v, want BlobAlreadyExists", se)
	}
	resp, err := bb.DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "precious" {
		t.Errorf("content %q: overwritten", body)
	}
}

// Set Blob Metadata with the lease ID and If-Match, as the claim sends it.
func TestAzuriteSetMetadataIfMatch(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	c := azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "cond"})
	if err := c.ensureBlob(ctx, true); err != nil {
		t.Fatal(err)
	}
	before := mustProps(t, c).etag
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	acq, err := c.api.acquireLease(ctx, id, 15)
	if err != nil {
		t.Fatal(err)
	}
	if acq.ETag == "" || acq.Date.IsZero() {
		t.Fatalf("acquire answered %+v: want an ETag and a Date", acq)
	}
	// Not a requirement (the claim is right either way), but worth knowing.
	t.Logf("ETag before acquire %s, in the acquire's answer %s (changed: %v)", before, acq.ETag, before != acq.ETag)
	e0 := mustProps(t, c).etag
	if e0 != acq.ETag {
		t.Errorf("a read after the acquire has ETag %s, the acquire answered %s", e0, acq.ETag)
	}
	want := func(what string, err error, status int, code string) {
		t.Helper()
		if status == 0 {
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
			return
		}
		se := asStorageError(err)
		if se == nil || se.StatusCode != status || se.Code != code {
			t.Errorf("%s: %v, want %d %s", what, err, status, code)
		}
	}
	_, err = c.api.setMetadata(ctx, id, e0, map[string]string{"term": "1"})
	want("lease ID and matching ETag", err, 0, "")
	e1 := mustProps(t, c).etag
	if e1 == e0 {
		t.Errorf("a metadata write left the ETag at %s", e0)
	}
	_, err = c.api.setMetadata(ctx, id, e0, map[string]string{"term": "2"})
	want("lease ID and a stale ETag", err, http.StatusPreconditionFailed, codeConditionNotMet)
	_, err = c.api.setMetadata(ctx, "00000000-0000-0000-0000-00000000000f", e1, map[string]string{"term": "2"})
	want("wrong lease ID, matching ETag", err, http.StatusPreconditionFailed, "LeaseIdMismatchWithBlobOperation")
	_, err = c.api.setMetadata(ctx, "", e1, map[string]string{"term": "2"})
	want("no lease ID, matching ETag", err, http.StatusPreconditionFailed, "LeaseIdMissing")
	if p := mustProps(t, c); p.Term != 1 || p.etag != e1 {
		t.Errorf("refused writes changed the blob: %+v", p)
	}
	_, err = c.api.setMetadata(ctx, id, e1, map[string]string{"term": "2"})
	want("lease ID and the current ETag", err, 0, "")
	if _, err := c.api.releaseLease(ctx, id); err != nil {
		t.Fatal(err)
	}
}
