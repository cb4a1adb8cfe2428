package blobsim_test

// Requests as they come on the wire, past the SDK: what the service
// refuses before it looks at a blob, what the model does not model, and
// answers in the form the SDK and the service's clients read.

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
)

// send sends a request through tr, signed for the account unless the
// headers say otherwise; header names as given (the SDK sends its x-ms-*
// in lowercase).
func send(t *testing.T, tr policy.Transporter, method, path string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, "http://127.0.0.1:10000"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header["Authorization"] = []string{"SharedKey devstoreaccount1:c2lnbmF0dXJl"}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			delete(req.Header, headers[i])
			continue
		}
		req.Header[headers[i]] = []string{headers[i+1]}
	}
	resp, err := tr.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestRequests(t *testing.T) {
	const blobPath = "/devstoreaccount1/ctr/x"
	for _, tc := range []struct {
		name         string
		method, path string
		headers      []string
		status       int
		code, header string // code and, for a header refused, its name in the error body
	}{
		{"not signed", "HEAD", blobPath, []string{"Authorization", ""}, 403, "AuthenticationFailed", ""},
		{"signed for another account", "HEAD", blobPath, []string{"Authorization", "SharedKey other:c2ln"}, 403, "AuthenticationFailed", ""},
		{"another account", "HEAD", "/other/ctr/x", nil, 403, "AuthenticationFailed", ""},
		{"a bearer token", "HEAD", blobPath, []string{"Authorization", "Bearer eyJ0"}, 200, "", ""},
		{"a SAS", "HEAD", blobPath + "?sv=2026-06-06&sig=c2ln", []string{"Authorization", ""}, 200, "", ""},
		{"Get Blob", "GET", blobPath, nil, 501, "NotImplemented", ""},
		{"a page blob", "PUT", blobPath, []string{"x-ms-blob-type", "PageBlob"}, 501, "NotImplemented", ""},
		{"Put Blob without a type", "PUT", blobPath, nil, 400, "MissingRequiredHeader", "x-ms-blob-type"},
		{"a container lease", "PUT", "/devstoreaccount1/ctr?restype=container&comp=lease", []string{"x-ms-lease-action", "acquire"}, 501, "NotImplemented", ""},
		{"a container name too short", "PUT", "/devstoreaccount1/ab?restype=container", nil, 400, "InvalidResourceName", ""},
		{"a container name in capitals", "PUT", "/devstoreaccount1/Abc?restype=container", nil, 400, "InvalidResourceName", ""},
		{"a container name with --", "PUT", "/devstoreaccount1/a--b?restype=container", nil, 400, "InvalidResourceName", ""},
		{"no lease action", "PUT", blobPath + "?comp=lease", nil, 400, "MissingRequiredHeader", "x-ms-lease-action"},
		{"an unknown lease action", "PUT", blobPath + "?comp=lease", []string{"x-ms-lease-action", "steal"}, 400, "InvalidHeaderValue", "x-ms-lease-action"},
		{"acquire without a duration", "PUT", blobPath + "?comp=lease", []string{"x-ms-lease-action", "acquire"}, 400, "MissingRequiredHeader", "x-ms-lease-duration"},
		{"acquire for 61 s", "PUT", blobPath + "?comp=lease", []string{"x-ms-lease-action", "acquire", "x-ms-lease-duration", "61"}, 400, "InvalidHeaderValue", "x-ms-lease-duration"},
		{"renew without an ID", "PUT", blobPath + "?comp=lease", []string{"x-ms-lease-action", "renew"}, 400, "MissingRequiredHeader", "x-ms-lease-id"},
		{"change without a proposed ID", "PUT", blobPath + "?comp=lease", []string{"x-ms-lease-action", "change", "x-ms-lease-id", idA}, 400, "MissingRequiredHeader", "x-ms-proposed-lease-id"},
		{"break with a period of -1", "PUT", blobPath + "?comp=lease", []string{"x-ms-lease-action", "break", "x-ms-lease-break-period", "-1"}, 400, "InvalidHeaderValue", "x-ms-lease-break-period"},
		{"a lease ID that is not a GUID", "PUT", blobPath + "?comp=metadata", []string{"x-ms-lease-id", "vm-1"}, 400, "InvalidHeaderValue", "x-ms-lease-id"},
		{"an empty metadata name", "PUT", blobPath + "?comp=metadata", []string{"x-ms-meta-", "v"}, 400, "EmptyMetadataKey", ""},
		{"list 0 a page", "GET", "/devstoreaccount1/ctr?restype=container&comp=list&maxresults=0", nil, 400, "OutOfRangeQueryParameterValue", ""},
		{"list x a page", "GET", "/devstoreaccount1/ctr?restype=container&comp=list&maxresults=x", nil, 400, "InvalidQueryParameterValue", ""},
		{"list from a made-up marker", "GET", "/devstoreaccount1/ctr?restype=container&comp=list&marker=x", nil, 400, "InvalidQueryParameterValue", ""},
		{"list including the unknown", "GET", "/devstoreaccount1/ctr?restype=container&comp=list&include=bogus", nil, 400, "InvalidQueryParameterValue", ""},
		{"a read conditional on another ETag", "HEAD", blobPath, []string{"If-Match", `"0x8D0"`}, 412, "ConditionNotMet", ""},
		{"a read unless the ETag", "HEAD", blobPath, []string{"If-None-Match", "*"}, 304, "", ""},
		{"a read with a lease ID", "HEAD", blobPath, []string{"x-ms-lease-id", idA}, 412, "LeaseNotPresentWithBlobOperation", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := blobsim.New()
			setup(t, s)
			resp := send(t, s.Transport("raw"), tc.method, tc.path, tc.headers...)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Header.Get("x-ms-error-code") != tc.code {
				t.Fatalf("%d %s, want %d %s\n%s", resp.StatusCode, resp.Header.Get("x-ms-error-code"), tc.status, tc.code, body)
			}
			if tc.code == "" || tc.method == http.MethodHead {
				if len(body) > 0 {
					t.Errorf("a body: %s", body)
				}
				return
			}
			var e struct {
				Code, Message, HeaderName string
			}
			if err := xml.Unmarshal(body, &e); err != nil || e.Code != tc.code || e.HeaderName != tc.header ||
				!regexp.MustCompile(`\nRequestId:[0-9a-f-]{36}\nTime:`).MatchString(e.Message) {
				t.Errorf("error body %q (%v): %+v", body, err, e)
			}
			if resp.Header.Get("Content-Type") != "application/xml" || resp.ContentLength != int64(len(body)) {
				t.Errorf("Content-Type %q, length %d of %d", resp.Header.Get("Content-Type"), resp.ContentLength, len(body))
			}
		})
	}
}

// An acquire that proposes no lease ID gets one the service chose.
func TestChosenLeaseID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := blobsim.New()
		setup(t, s)
		resp := send(t, s.Transport("raw"), "PUT", "/devstoreaccount1/ctr/x?comp=lease", "x-ms-lease-action", "acquire", "x-ms-lease-duration", "15")
		id := resp.Header.Get("x-ms-lease-id")
		if resp.StatusCode != 201 || !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
			t.Fatalf("%d, lease ID %q", resp.StatusCode, id)
		}
		if info, _ := s.Blob(ctr, "x"); info.LeaseID != id {
			t.Errorf("held by %q", info.LeaseID)
		}
	})
}

// Every answer's headers are in canonical form, as a client's net/http
// gives them (the SDK reads them with Header.Get, and metadata names from
// the keys); the client's request ID comes back.
func TestAnswersAsOnTheWire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := blobsim.New()
		var rec headerRecorder
		setup(t, s)
		c := newClient(t, s, "a", 0, &rec)
		ctx := t.Context()
		v := "vm-1"
		_, _ = c.blob("x").SetMetadata(ctx, map[string]*string{"holder": &v, "lastrun_end": &v}, nil)
		_ = c.acquire(ctx, "x", idA, 15)
		_ = c.acquire(ctx, "x", idB, 15)
		_, _ = c.breakLease(ctx, "x", 5)
		p, err := c.blob("x").GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *p.Metadata["Holder"] != "vm-1" || *p.Metadata["Lastrun_end"] != "vm-1" {
			t.Errorf("metadata as the SDK reads it: %v", p.Metadata)
		}
		_, _ = c.blob("y").GetProperties(ctx, nil)
		_, _ = c.cc.GetProperties(ctx, nil)
		_, _ = c.cc.GetAccountInfo(ctx, nil)
		_, _ = c.cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Metadata: true}}).NextPage(ctx)
		if len(rec.answers) != 9 {
			t.Fatalf("%d answers", len(rec.answers))
		}
		for i, h := range rec.answers {
			for k := range h {
				if k != http.CanonicalHeaderKey(k) {
					t.Errorf("answer %d: header %q not canonical", i+1, k)
				}
			}
			for _, k := range []string{"Date", "X-Ms-Request-Id", "X-Ms-Version", "Content-Length"} {
				if h.Get(k) == "" {
					t.Errorf("answer %d: no %s", i+1, k)
				}
			}
		}
		resp := send(t, s.Transport("raw"), "HEAD", "/devstoreaccount1/ctr/x", "x-ms-client-request-id", "req-7")
		if got := resp.Header.Get("X-Ms-Client-Request-Id"); got != "req-7" {
			t.Errorf("client request ID %q", got)
		}
	})
}

// A page lists up to 5,000 blobs, whatever maxresults asks.
func TestListPageSize(t *testing.T) {
	s := blobsim.New()
	setup(t, s)
	tr := s.Transport("raw")
	for i := range 5001 {
		resp := send(t, tr, "PUT", fmt.Sprintf("/devstoreaccount1/ctr/b%05d", i), "x-ms-blob-type", "BlockBlob")
		if resp.StatusCode != 201 {
			t.Fatal(resp.Status)
		}
	}
	c := newClient(t, s, "a", 0)
	for _, max := range []int32{0, 6000} {
		opts := &container.ListBlobsFlatOptions{Prefix: new("b")}
		if max > 0 {
			opts.MaxResults = &max
		}
		var sizes []int
		for pager := c.cc.NewListBlobsFlatPager(opts); pager.More(); {
			page, err := pager.NextPage(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(page.Segment.BlobItems))
		}
		if fmt.Sprint(sizes) != "[5000 1]" {
			t.Errorf("maxresults %d: pages of %v, want [5000 1]", max, sizes)
		}
	}
	if names := s.Names(ctr); len(names) != 5002 || names[0] != "b00000" || !strings.HasPrefix(names[5001], "x") {
		t.Errorf("names: %d, %v ... %v", len(names), names[0], names[len(names)-1])
	}
}
