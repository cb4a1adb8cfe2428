package blobsim_test

// The conformance harness: one scenario (a list of SDK calls, as lease
// makes them, with azblob v1.8.0's clients) run against a target (the
// model through its Transport, the model over loopback HTTP, or the Azurite
// emulator), each answer observed in the same normalised form so that
// targets can be compared: statuses, error codes, lease states, ETags and
// lease IDs as labels in order of first appearance, x-ms-lease-time,
// metadata and listings page by page.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	azlease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/google/uuid"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// azuriteConnectionString is the emulator's, from
// LEADERRUN_TEST_CONNECTION_STRING (scripts/azurite.sh start prints one);
// "" without one, which fails the test under CI=true.
func azuriteConnectionString(t *testing.T) string {
	t.Helper()
	cs := os.Getenv("LEADERRUN_TEST_CONNECTION_STRING")
	if cs == "" && os.Getenv("CI") == "true" {
		t.Fatal("LEADERRUN_TEST_CONNECTION_STRING is not set and CI=true: start the emulator with scripts/azurite.sh start")
	}
	return cs
}

// obs is one answer, normalised. In a step's want, "" (and 0) fields are
// not checked.
type obs struct {
	Status    int
	Code      string   // x-ms-error-code
	ETag      string   // label of the ETag answered: e1, e2, ... in order of first appearance
	LeaseID   string   // label of x-ms-lease-id answered (A, B, ... as the scenario names them)
	LeaseTime string   // x-ms-lease-time
	State     string   // x-ms-lease-state / status / duration: "leased/locked/fixed"
	Created   string   // label of x-ms-creation-time: c1, c2, ...
	Meta      string   // x-ms-meta-*: "k=v,k=v", names lowercased, sorted
	Extra     string   // account and container settings: "name=value ..."
	Pages     []string // a listing: one string per page, its blobs "name state etag {meta}" joined by " | "
}

func (o obs) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", o.Status)
	for _, f := range []struct{ k, v string }{{"code", o.Code}, {"etag", o.ETag}, {"leaseID", o.LeaseID},
		{"leaseTime", o.LeaseTime}, {"state", o.State}, {"created", o.Created}, {"meta", o.Meta}, {"extra", o.Extra}} {
		if f.v != "" {
			fmt.Fprintf(&b, " %s=%s", f.k, f.v)
		}
	}
	for i, p := range o.Pages {
		fmt.Fprintf(&b, "\n\t\tpage %d: %s", i+1, p)
	}
	return b.String()
}

// matches reports whether o has every field want sets. On real time (an
// emulator, a machine that may be loaded) a second may pass between two
// steps: x-ms-lease-time may then be one less than on virtual time.
func (o obs) matches(want obs, realTime bool) bool {
	eq := func(got, want string) bool { return want == "" || got == want }
	leaseTime := eq(o.LeaseTime, want.LeaseTime) || realTime && secondApart(o.LeaseTime, want.LeaseTime)
	return o.Status == want.Status && eq(o.Code, want.Code) && eq(o.ETag, want.ETag) && eq(o.LeaseID, want.LeaseID) &&
		leaseTime && eq(o.State, want.State) && eq(o.Created, want.Created) &&
		eq(o.Meta, want.Meta) && eq(o.Extra, want.Extra) && (want.Pages == nil || slices.Equal(o.Pages, want.Pages))
}

// secondApart reports whether two x-ms-lease-time values differ by one.
func secondApart(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	return errA == nil && errB == nil && (x-y == 1 || y-x == 1)
}

// step is one SDK call of a scenario and the service's answer to it.
type step struct {
	what string
	do   func(r *run) error
	wait time.Duration // instead of a call: wait this long
	want obs
	// azurite, when set, is what Azurite answers where it differs from the
	// service; the comment at the step says how the model follows the
	// service.
	azurite *obs
}

func (s step) is(status int, code string) step { s.want.Status, s.want.Code = status, code; return s }
func (s step) etag(label string) step          { s.want.ETag = label; return s }
func (s step) leaseID(label string) step       { s.want.LeaseID = label; return s }
func (s step) leaseTime(n int) step            { s.want.LeaseTime = fmt.Sprint(n); return s }
func (s step) state(st string) step            { s.want.State = st; return s }
func (s step) created(label string) step       { s.want.Created = label; return s }
func (s step) meta(m string) step              { s.want.Meta = m; return s }
func (s step) extra(e string) step             { s.want.Extra = e; return s }
func (s step) pages(p ...string) step          { s.want.Pages = p; return s }
func (s step) onAzurite(o obs) step            { s.azurite = &o; return s }

// target is where a scenario runs: a container client factory.
type target struct {
	name string
	// client is a container client with opts (the recorder's policy).
	client func(t *testing.T, name string, opts azcore.ClientOptions) *container.Client
}

// modelTarget sends through the model's Transport.
func modelTarget(s *blobsim.Service) target {
	return target{name: "model", client: func(t *testing.T, name string, opts azcore.ClientOptions) *container.Client {
		opts.Transport = s.Transport("conformance")
		cred, err := blob.NewSharedKeyCredential(blobsim.Account, blobsim.Key)
		if err != nil {
			t.Fatal(err)
		}
		cc, err := container.NewClientWithSharedKeyCredential(blobsim.Endpoint+"/"+name, cred,
			&container.ClientOptions{ClientOptions: opts})
		if err != nil {
			t.Fatal(err)
		}
		return cc
	}}
}

// stringTarget sends over HTTP to the service of a connection string.
func stringTarget(name, cs string) target {
	return target{name: name, client: func(t *testing.T, cname string, opts azcore.ClientOptions) *container.Client {
		cc, err := container.NewClientFromConnectionString(cs, cname, &container.ClientOptions{ClientOptions: opts})
		if err != nil {
			t.Fatal(err)
		}
		return cc
	}}
}

// run is one scenario on one target.
type run struct {
	t       *testing.T
	ctx     context.Context
	tg      target
	name    string // the container
	cc      *container.Client
	rec     *recorder
	ids     map[string]string // lease ID label → GUID
	labels  map[string]string // GUID, ETag or creation time → its label
	etags   map[string]string // ETag label → the ETag, quoted
	nETags  int
	nCreate int
	pages   []string // the pages of the last listing
}

func newRun(t *testing.T, tg target) *run {
	r := &run{t: t, ctx: t.Context(), tg: tg, name: "t-" + testenv.RandHex(6), rec: &recorder{},
		ids: map[string]string{}, labels: map[string]string{}, etags: map[string]string{}}
	r.cc = r.client(r.name)
	return r
}

func (r *run) client(name string) *container.Client {
	opts := azcore.ClientOptions{
		Retry:           policy.RetryOptions{MaxRetries: -1, TryTimeout: 10 * time.Second},
		Telemetry:       policy.TelemetryOptions{Disabled: true},
		PerCallPolicies: []policy.Policy{r.rec},
	}
	return r.tg.client(r.t, name, opts)
}

func (r *run) blob(name string) *blockblob.Client { return r.cc.NewBlockBlobClient(name) }

// id is the GUID of a lease ID label; a label beginning with '!' is sent
// as it is (not a GUID).
func (r *run) id(label string) string {
	if v, ok := strings.CutPrefix(label, "!"); ok {
		return v
	}
	if r.ids[label] == "" {
		r.ids[label] = uuid.NewString()
		r.labels[r.ids[label]] = label
	}
	return r.ids[label]
}

func (r *run) lease(blobName, label string) *azlease.BlobClient {
	var opts *azlease.BlobClientOptions
	if label != "" {
		id := r.id(label)
		opts = &azlease.BlobClientOptions{LeaseID: &id}
	}
	l, err := azlease.NewBlobClient(r.blob(blobName).BlobClient(), opts)
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

// etag is the ETag of a label: "" none, "*" any, "stale" one never given.
func (r *run) etag(label string) *azcore.ETag {
	var e azcore.ETag
	switch label {
	case "":
		return nil
	case "*":
		e = azcore.ETagAny
	case "stale":
		e = `"0x8D0123456789ABC"`
	default:
		e = azcore.ETag(r.etags[label])
		if e == "" {
			r.t.Fatalf("no ETag labelled %s yet", label)
		}
	}
	return &e
}

func (r *run) etagLabel(e string) string {
	bare := strings.Trim(e, `"`)
	if bare == "" {
		return ""
	}
	if r.labels[bare] == "" {
		r.nETags++
		r.labels[bare] = fmt.Sprintf("e%d", r.nETags)
		r.etags[r.labels[bare]] = `"` + bare + `"`
	}
	return r.labels[bare]
}

func (r *run) createdLabel(text string) string {
	if text == "" {
		return ""
	}
	k := "created " + text
	if r.labels[k] == "" {
		r.nCreate++
		r.labels[k] = fmt.Sprintf("c%d", r.nCreate)
	}
	return r.labels[k]
}

// observe normalises the last answer; err must be nil or the SDK's
// *azcore.ResponseError (anything else is the transport failing: fatal).
func (r *run) observe(err error) obs {
	var re *azcore.ResponseError
	if err != nil && !errors.As(err, &re) {
		r.t.Fatalf("%s: not an answer: %v", r.tg.name, err)
	}
	resp := r.rec.last
	if resp == nil {
		r.t.Fatalf("%s: no answer recorded", r.tg.name)
	}
	h := resp.Header
	o := obs{Status: resp.StatusCode, Code: h.Get("x-ms-error-code")}
	if resp.StatusCode >= 300 {
		return o
	}
	o.ETag = r.etagLabel(h.Get("ETag"))
	if id := h.Get("x-ms-lease-id"); id != "" {
		o.LeaseID = r.labels[id]
		if o.LeaseID == "" {
			o.LeaseID = "?" + id
		}
	}
	o.LeaseTime = h.Get("x-ms-lease-time")
	if st := h.Get("x-ms-lease-state"); st != "" && resp.Request.Method == http.MethodHead {
		o.State = st + "/" + h.Get("x-ms-lease-status")
		if d := h.Get("x-ms-lease-duration"); d != "" {
			o.State += "/" + d
		}
	}
	o.Created = r.createdLabel(h.Get("x-ms-creation-time"))
	var meta []string
	for k, v := range h {
		if name, ok := strings.CutPrefix(strings.ToLower(k), "x-ms-meta-"); ok {
			meta = append(meta, name+"="+v[0])
		}
	}
	slices.Sort(meta)
	o.Meta = strings.Join(meta, ",")
	var extra []string
	for _, k := range []string{"x-ms-has-immutability-policy", "x-ms-has-legal-hold", "x-ms-sku-name", "x-ms-account-kind", "x-ms-is-hns-enabled"} {
		if v := h.Get(k); v != "" {
			extra = append(extra, strings.TrimPrefix(k, "x-ms-")+"="+v)
		}
	}
	o.Extra = strings.Join(extra, " ")
	return o
}

// recorder keeps the last answer of its client and, for a listing, adds
// startFrom to the query (azblob v1.8.0's pager drops the option) before
// the request is signed.
type recorder struct {
	last      *http.Response
	startFrom string
}

func (rc *recorder) Do(req *policy.Request) (*http.Response, error) {
	if u := req.Raw().URL; rc.startFrom != "" && u.Query().Get("comp") == "list" {
		u.RawQuery += "&startFrom=" + url.QueryEscape(rc.startFrom)
	}
	resp, err := req.Next()
	if resp != nil {
		rc.last = resp
	}
	return resp, err
}

func wait(d time.Duration) step { return step{what: "wait " + d.String(), wait: d} }

// play runs steps on tg and returns what each answered.
func play(t *testing.T, tg target, steps []step) []obs {
	t.Helper()
	r := newRun(t, tg)
	out := make([]obs, len(steps))
	for i, s := range steps {
		if s.wait > 0 {
			time.Sleep(s.wait)
			continue
		}
		r.rec.last = nil
		err := s.do(r)
		out[i] = r.observe(err)
		if r.pages != nil {
			out[i].Pages, r.pages = r.pages, nil
		}
	}
	return out
}
