package lease

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// Why leaderrun speaks REST itself.
//
// leaderrun needs eight Blob service requests on one blob. The azblob module
// serves them through its container package, which links Apache Arrow,
// klauspost/compress, goccy/go-json, flatbuffers and lz4 into every binary
// that asks for a lease, and start cost is what leaderrun's users pay on
// every run (a run starts the binary twice). Measured on the benchmark
// machine (November 2026) when these requests moved from azblob to the few
// functions below: the binary went from 26.6 MB to 17.3 MB, its packages
// from 350 to 284, their init work from 3.6 ms to 1.5 ms, and `leaderrun
// version` from 5.8 ms to 4.6 ms of task-clock (medians). The requests go
// through azcore's own pipeline (the same transport bounds, no SDK retries,
// per-try timeouts, Entra ID bearer tokens), so only the request shapes and
// the Shared Key signer (sharedkey.go) are ours.
//
// STYLE.md items 4 and 10 still hold in spirit: blobAPI below is the narrow,
// unexported interface at the storage edge (restBlob sends the requests, a
// fake stands in for unit tests), and mapError in errors.go is the one
// place where failures are classified, by Azure error code.

// apiVersion is the Blob service version leaderrun speaks (x-ms-version). It
// is a generally available version of the public cloud, and the newest that
// Azurite 3.35.0 accepts without --skipApiVersionCheck. Everything leaderrun
// uses (leases with a proposed ID, Entra ID bearer tokens, the empty
// Content-Length rule of Shared Key) dates from 2017-11-09 or earlier.
const apiVersion = "2025-11-05"

// blobAPI is the storage edge: the Blob service requests leaderrun makes on
// one blob and its container. restBlob sends them over HTTP; tests use a
// fake. A refusal (any status but 2xx) is an *azcore.ResponseError with the
// service's x-ms-error-code; other failures are the transport's or the
// context's error. Callers classify both with Client.mapError.
type blobAPI interface {
	// Lease Blob, x-ms-lease-action acquire, with a proposed lease ID and
	// a duration in whole seconds (15–60).
	acquireLease(ctx context.Context, leaseID string, seconds int) (answer, error)
	renewLease(ctx context.Context, leaseID string) (answer, error)
	releaseLease(ctx context.Context, leaseID string) (answer, error)
	// breakLease needs no lease ID; answer.LeaseTime is the time left until
	// the lease is broken.
	breakLease(ctx context.Context, periodSeconds int) (answer, error)
	// getProperties is Get Blob Properties (HEAD).
	getProperties(ctx context.Context) (blobProps, error)
	// setMetadata is Set Blob Metadata: md replaces the blob's metadata,
	// with leaseID as access condition and, if ifMatch is not empty,
	// If-Match: ifMatch.
	setMetadata(ctx context.Context, leaseID, ifMatch string, md map[string]string) (answer, error)
	// createBlob is Put Blob: a zero-length block blob, If-None-Match: *.
	createBlob(ctx context.Context) (answer, error)
	// createContainer is Create Container.
	createContainer(ctx context.Context) (answer, error)
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
}

var _ blobAPI = (*restBlob)(nil)

// restBlob sends blobAPI's requests through an azcore pipeline, which signs
// them (Shared Key or Entra ID) and bounds each try.
type restBlob struct {
	pl           runtime.Pipeline
	blobURL      string // escaped path, no query
	containerURL string // no query
	// sas is the SAS token (a query string without '?'), appended to every
	// request; "" when another credential signs. It never leaves this
	// struct except on the wire: errors are sanitized by mapError.
	sas string
}

// newPipeline builds the pipeline: auth (nil for SAS) runs for every try,
// after the retry policy, which makes one try only (MaxRetries -1: leaderrun
// retries with its own deadlines) bounded by tryTimeout.
func newPipeline(auth policy.Policy, transport policy.Transporter) runtime.Pipeline {
	var perRetry []policy.Policy
	if auth != nil {
		perRetry = append(perRetry, auth)
	}
	return runtime.NewPipeline("leaderrun", "", runtime.PipelineOptions{PerRetry: perRetry}, &policy.ClientOptions{
		Retry:     policy.RetryOptions{MaxRetries: -1, TryTimeout: tryTimeout},
		Telemetry: policy.TelemetryOptions{Disabled: true},
		Transport: transport,
	})
}

// Header names, as Go canonicalizes them.
const (
	hdrDate          = "Date"
	hdrETag          = "Etag"
	hdrIfMatch       = "If-Match"
	hdrIfNoneMatch   = "If-None-Match"
	hdrVersion       = "X-Ms-Version"
	hdrBlobType      = "X-Ms-Blob-Type"
	hdrLeaseAction   = "X-Ms-Lease-Action"
	hdrLeaseDuration = "X-Ms-Lease-Duration"
	hdrLeaseID       = "X-Ms-Lease-Id"
	hdrProposedID    = "X-Ms-Proposed-Lease-Id"
	hdrBreakPeriod   = "X-Ms-Lease-Break-Period"
	hdrLeaseTime     = "X-Ms-Lease-Time"
	hdrLeaseState    = "X-Ms-Lease-State"
	metaPrefix       = "x-ms-meta-"
)

// send makes one request to base (the blob or container URL) with query
// (without the SAS, which send appends) and the headers set by header,
// and returns the response of a 2xx answer, its body read and closed.
func (r *restBlob) send(ctx context.Context, method, base, query string, header func(http.Header)) (*http.Response, error) {
	if r.sas != "" {
		if query != "" {
			query += "&"
		}
		query += r.sas
	}
	u := base
	if query != "" {
		u += "?" + query
	}
	req, err := runtime.NewRequest(ctx, method, u)
	if err != nil {
		return nil, err
	}
	h := req.Raw().Header
	h.Set(hdrVersion, apiVersion)
	h.Set("User-Agent", "leaderrun")
	if header != nil {
		header(h)
	}
	resp, err := r.pl.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := runtime.NewResponseError(resp)
		resp.Body.Close()
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

func (r *restBlob) lease(ctx context.Context, header func(http.Header)) (answer, error) {
	resp, err := r.send(ctx, http.MethodPut, r.blobURL, "comp=lease", header)
	if err != nil {
		return answer{}, err
	}
	return readAnswer(resp.Header), nil
}

func (r *restBlob) acquireLease(ctx context.Context, leaseID string, seconds int) (answer, error) {
	return r.lease(ctx, func(h http.Header) {
		h.Set(hdrLeaseAction, "acquire")
		h.Set(hdrLeaseDuration, strconv.Itoa(seconds))
		h.Set(hdrProposedID, leaseID)
	})
}

func (r *restBlob) renewLease(ctx context.Context, leaseID string) (answer, error) {
	return r.lease(ctx, func(h http.Header) {
		h.Set(hdrLeaseAction, "renew")
		h.Set(hdrLeaseID, leaseID)
	})
}

func (r *restBlob) releaseLease(ctx context.Context, leaseID string) (answer, error) {
	return r.lease(ctx, func(h http.Header) {
		h.Set(hdrLeaseAction, "release")
		h.Set(hdrLeaseID, leaseID)
	})
}

func (r *restBlob) breakLease(ctx context.Context, periodSeconds int) (answer, error) {
	return r.lease(ctx, func(h http.Header) {
		h.Set(hdrLeaseAction, "break")
		h.Set(hdrBreakPeriod, strconv.Itoa(periodSeconds))
	})
}

func (r *restBlob) getProperties(ctx context.Context) (blobProps, error) {
	resp, err := r.send(ctx, http.MethodHead, r.blobURL, "", nil)
	if err != nil {
		return blobProps{}, err
	}
	p := blobProps{answer: readAnswer(resp.Header), LeaseState: resp.Header.Get(hdrLeaseState), Metadata: map[string]string{}}
	for k, v := range resp.Header {
		if len(v) > 0 && len(k) > len(metaPrefix) && strings.EqualFold(k[:len(metaPrefix)], metaPrefix) {
			p.Metadata[strings.ToLower(k[len(metaPrefix):])] = v[0]
		}
	}
	return p, nil
}

func (r *restBlob) setMetadata(ctx context.Context, leaseID, ifMatch string, md map[string]string) (answer, error) {
	resp, err := r.send(ctx, http.MethodPut, r.blobURL, "comp=metadata", func(h http.Header) {
		h.Set(hdrLeaseID, leaseID)
		if ifMatch != "" {
			h.Set(hdrIfMatch, ifMatch)
		}
		for k, v := range md {
			// Not canonicalized: Azure keeps a metadata name's case as
			// sent, and leaderrun writes every name lowercased.
			h[metaPrefix+strings.ToLower(k)] = []string{v}
		}
	})
	if err != nil {
		return answer{}, err
	}
	return readAnswer(resp.Header), nil
}

func (r *restBlob) createBlob(ctx context.Context) (answer, error) {
	// No body: Go sends Content-Length: 0 on a PUT.
	resp, err := r.send(ctx, http.MethodPut, r.blobURL, "", func(h http.Header) {
		h.Set(hdrBlobType, "BlockBlob")
		h.Set(hdrIfNoneMatch, "*")
	})
	if err != nil {
		return answer{}, err
	}
	return readAnswer(resp.Header), nil
}

func (r *restBlob) createContainer(ctx context.Context) (answer, error) {
	resp, err := r.send(ctx, http.MethodPut, r.containerURL, "restype=container", nil)
	if err != nil {
		return answer{}, err
	}
	return readAnswer(resp.Header), nil
}

func readAnswer(h http.Header) answer {
	a := answer{ETag: h.Get(hdrETag), LeaseTime: -1}
	if d, err := http.ParseTime(h.Get(hdrDate)); err == nil {
		a.Date = d.UTC()
	}
	if s := h.Get(hdrLeaseTime); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			a.LeaseTime = n
		}
	}
	return a
}
