package lease

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests of azBlob's requests on the wire, against a recording server.

// seenRequest is what a test server received.
type seenRequest struct {
	method, path  string // path: escaped, as sent
	query         url.Values
	header        http.Header
	contentLength int64
	transfer      []string
}

// recordingServer answers every request with answer's status and headers,
// and records what it received.
func recordingServer(t *testing.T, answer func(r *http.Request) (int, http.Header)) (string, func() []seenRequest) {
	t.Helper()
	var (
		mu   sync.Mutex
		seen []seenRequest
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, seenRequest{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.Query(),
			header: r.Header.Clone(), contentLength: r.ContentLength, transfer: r.TransferEncoding})
		mu.Unlock()
		status, h := answer(r)
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]seenRequest(nil), seen...)
	}
}

func okAnswer(r *http.Request) (int, http.Header) {
	h := http.Header{"Date": {"Sun, 22 Nov 2026 10:00:00 GMT"}, "Etag": {`"0x8D0ABC"`}}
	status := http.StatusOK
	switch {
	case r.Header.Get("X-Ms-Lease-Action") == "acquire", r.Header.Get("X-Ms-Blob-Type") != "",
		r.URL.Query().Get("restype") == "container":
		status = http.StatusCreated
	case r.Method == http.MethodDelete:
		status = http.StatusAccepted
	case r.Header.Get("X-Ms-Lease-Action") == "break":
		status = http.StatusAccepted
		h.Set("X-Ms-Lease-Time", "7")
	case r.Method == http.MethodHead:
		h.Set("X-Ms-Lease-State", "leased")
		h.Set("X-Ms-Meta-Holder", "vm-1")
		h["x-ms-meta-term"] = []string{"12"}
		h.Set("X-Ms-Meta-Owner", "team x")
	}
	return status, h
}

// azCall is one blobAPI call and what must go on the wire for it.
type azCall struct {
	name   string
	do     func(api blobAPI) error
	method string
	query  string            // before the SAS
	header map[string]string // "" = absent
}

func azCalls(t *testing.T, ctx context.Context, id string) []azCall {
	return []azCall{
		{"acquire", func(api blobAPI) error {
			a, err := api.acquireLease(ctx, id, 15)
			if err == nil && (a.ETag != `"0x8D0ABC"` || !a.Date.Equal(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)) || a.LeaseTime != -1) {
				t.Errorf("acquire answer %+v", a)
			}
			return err
		}, "PUT", "comp=lease", map[string]string{"X-Ms-Lease-Action": "acquire", "X-Ms-Lease-Duration": "15",
			"X-Ms-Proposed-Lease-Id": id, "X-Ms-Lease-Id": "", "If-Match": ""}},
		{"renew", func(api blobAPI) error { _, err := api.renewLease(ctx, id); return err },
			"PUT", "comp=lease", map[string]string{"X-Ms-Lease-Action": "renew", "X-Ms-Lease-Id": id}},
		{"release", func(api blobAPI) error { _, err := api.releaseLease(ctx, id); return err },
			"PUT", "comp=lease", map[string]string{"X-Ms-Lease-Action": "release", "X-Ms-Lease-Id": id}},
		{"break", func(api blobAPI) error {
			a, err := api.breakLease(ctx, 0)
			if err == nil && a.LeaseTime != 7 {
				t.Errorf("break answer %+v", a)
			}
			return err
		}, "PUT", "comp=lease", map[string]string{"X-Ms-Lease-Action": "break", "X-Ms-Lease-Break-Period": "0", "X-Ms-Lease-Id": ""}},
		{"get properties", func(api blobAPI) error {
			p, err := api.getProperties(ctx)
			if err == nil && (p.LeaseState != "leased" || p.Metadata["holder"] != "vm-1" || p.Metadata["term"] != "12" ||
				p.Metadata["owner"] != "team x" || len(p.Metadata) != 3 || p.ETag != `"0x8D0ABC"` || p.Date.IsZero()) {
				t.Errorf("properties %+v", p)
			}
			return err
		}, "HEAD", "", nil},
		{"set metadata", func(api blobAPI) error {
			_, err := api.setMetadata(ctx, id, `"0x8D0ABC"`, map[string]string{"holder": "vm-2", "Owner": "team x"})
			return err
		}, "PUT", "comp=metadata", map[string]string{"X-Ms-Lease-Id": id, "If-Match": `"0x8D0ABC"`,
			"X-Ms-Meta-Holder": "vm-2", "X-Ms-Meta-Owner": "team x"}},
		{"set metadata without If-Match", func(api blobAPI) error { _, err := api.setMetadata(ctx, id, "", nil); return err },
			"PUT", "comp=metadata", map[string]string{"X-Ms-Lease-Id": id, "If-Match": ""}},
		{"create blob", func(api blobAPI) error { _, err := api.createBlob(ctx); return err },
			"PUT", "", map[string]string{"X-Ms-Blob-Type": "BlockBlob", "If-None-Match": "*"}},
		{"create container", func(api blobAPI) error { _, err := api.createContainer(ctx); return err },
			"PUT", "restype=container", nil},
		{"put blob", func(api blobAPI) error {
			_, err := api.putBlob(ctx, map[string]string{"reason": "maintenance", "Since": "2026-11-22T10:00:00Z"})
			return err
		}, "PUT", "", map[string]string{"X-Ms-Blob-Type": "BlockBlob", "If-None-Match": "", "X-Ms-Lease-Id": "",
			"X-Ms-Meta-Reason": "maintenance", "X-Ms-Meta-Since": "2026-11-22T10:00:00Z"}},
		{"delete blob", func(api blobAPI) error { _, err := api.deleteBlob(ctx); return err },
			"DELETE", "", map[string]string{"X-Ms-Lease-Id": ""}},
	}
}

// The requests on the wire, for each operation and both key and SAS auth:
// one request per call (no SDK retries), the lease ID and If-Match where
// the claim needs them, metadata names lowercased, the SAS in the query.
func TestAzBlobRequestShapes(t *testing.T) {
	base, seen := recordingServer(t, okAnswer)
	const (
		blob = "my dir/a+b#c?d%e ü"
		// url.PathEscape per segment: '+' stays, the rest is escaped.
		path = "/devstoreaccount1/c-1/my%20dir/a+b%23c%3Fd%25e%20%C3%BC"
		id   = "0f8fad5b-d9cb-469f-a165-70867728950e"
	)
	sasQuery, err := url.ParseQuery(testSAS)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range []string{"key", "sas"} {
		t.Run(auth, func(t *testing.T) {
			cfg := ClientConfig{Endpoint: base + "/" + devAccount, Container: "c-1", Blob: blob}
			if auth == "key" {
				cfg.Account, cfg.AccountKey = devAccount, devKey
			} else {
				cfg.SASToken = "?" + testSAS
			}
			c := azuriteBlob(t, cfg)
			before := len(seen())
			calls := azCalls(t, context.Background(), id)
			for _, tc := range calls {
				if err := tc.do(c.api); err != nil {
					t.Errorf("%s: %v", tc.name, err)
					continue
				}
				all := seen()
				r := all[len(all)-1]
				wantPath := path
				if tc.name == "create container" {
					wantPath = "/devstoreaccount1/c-1"
				}
				want, _ := url.ParseQuery(tc.query)
				if auth == "sas" {
					for k, v := range sasQuery {
						want[k] = v
					}
				}
				if r.method != tc.method || r.path != wantPath || r.query.Encode() != want.Encode() {
					t.Errorf("%s: %s %s?%s\nwant %s %s?%s", tc.name, r.method, r.path, r.query.Encode(), tc.method, wantPath, want.Encode())
				}
				for k, v := range tc.header {
					if got, ok := r.header[http.CanonicalHeaderKey(k)]; v == "" && ok || v != "" && (len(got) != 1 || got[0] != v) {
						t.Errorf("%s: %s = %q, want %q", tc.name, k, got, v)
					}
				}
				for k := range r.header {
					if strings.HasPrefix(strings.ToLower(k), "x-ms-meta-") && tc.header[k] == "" {
						t.Errorf("%s: unexpected %s", tc.name, k)
					}
				}
				if tc.method == "PUT" && (r.contentLength != 0 || len(r.transfer) != 0 || r.header.Get("Content-Length") != "0") {
					// The service wants Content-Length: 0 on a PUT without a body (411 otherwise).
					t.Errorf("%s: Content-Length %q (%d), transfer %v", tc.name, r.header.Get("Content-Length"), r.contentLength, r.transfer)
				}
				authz := r.header.Get("Authorization")
				switch auth {
				case "key":
					if !strings.HasPrefix(authz, "SharedKey devstoreaccount1:") {
						t.Errorf("%s: Authorization %q", tc.name, authz)
					}
				case "sas":
					if authz != "" {
						t.Errorf("%s: Authorization %q with a SAS", tc.name, authz)
					}
				}
			}
			if n := len(seen()) - before; n != len(calls) {
				t.Errorf("%d requests for %d calls, want one each (no retries)", n, len(calls))
			}
		})
	}
}

// Refusals come out of the edge as *StorageError with the service's code,
// classified by mapError; one request each, not retried, even on 503; no SAS
// reaches the message, even when the service echoes the URL.
func TestAzBlobRefusals(t *testing.T) {
	base, seen := recordingServer(t, func(r *http.Request) (int, http.Header) {
		switch {
		case r.Method == http.MethodHead:
			return http.StatusNotFound, nil // a HEAD answer has no body and here no code
		case r.URL.Query().Get("comp") == "metadata":
			return http.StatusPreconditionFailed, http.Header{"X-Ms-Error-Code": {"ConditionNotMet"}}
		case r.Header.Get("X-Ms-Lease-Action") == "renew":
			return http.StatusServiceUnavailable, http.Header{"X-Ms-Error-Code": {"ServerBusy"}}
		}
		return http.StatusConflict, http.Header{"X-Ms-Error-Code": {"LeaseAlreadyPresent"}, "X-Echo": {r.URL.String()}}
	})
	c := azuriteBlob(t, ClientConfig{Endpoint: base + "/" + devAccount, Container: "c-1", Blob: "lock", SASToken: testSAS})
	ctx := context.Background()

	_, err := c.api.acquireLease(ctx, "id", 15)
	var se *StorageError
	if !errors.As(err, &se) || se.StatusCode != 409 || se.Code != "LeaseAlreadyPresent" || se.kind != kindHeld {
		t.Errorf("acquire: %v", err)
	}
	if strings.Contains(err.Error(), "sig=") || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Errorf("acquire: the message leaks the SAS: %v", err)
	}
	p, err := c.Properties(ctx)
	if err != nil || p.Exists || p.State != StateAbsent {
		t.Errorf("properties of a 404 without a code: %+v, %v", p, err)
	}
	_, err = c.api.setMetadata(ctx, "id", `"0x1"`, map[string]string{"a": "b"})
	if !errors.As(err, &se) || se.StatusCode != 412 || se.Code != codeConditionNotMet || se.kind != kindConflict {
		t.Errorf("set metadata: %v", err)
	}
	n := len(seen())
	_, err = c.api.renewLease(ctx, "id")
	if !errors.As(err, &se) || se.StatusCode != 503 || !se.Transient() {
		t.Errorf("renew: %v", err)
	}
	if got := len(seen()) - n; got != 1 {
		t.Errorf("a 503 was sent %d times, want once (leaderrun retries, not the SDK)", got)
	}
}
