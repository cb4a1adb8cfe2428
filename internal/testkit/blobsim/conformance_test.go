package blobsim_test

import (
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
)

// The scenarios: sequences of the SDK calls lease makes, and what the Blob
// service answers. Each is checked against the model through its
// Transport (in a synctest bubble: its waits take no time), against the
// model over loopback HTTP (scenarios without waits), and, when
// LEADERRUN_TEST_CONNECTION_STRING names one, against Azurite, whose
// every answer must then equal the model's, step for step, except where a
// step says how Azurite differs from the service.
var scenarios = []struct {
	name  string
	steps []step
}{
	{"lease table", []step{
		createContainer().is(201, "").etag("e1"),
		create("x").is(201, "").etag("e2"),
		create("x").is(409, "BlobAlreadyExists"),
		acquire("x", "A", 10).is(400, "InvalidHeaderValue"),
		acquire("x", "A", 14).is(400, "InvalidHeaderValue"),
		acquire("x", "A", 61).is(400, "InvalidHeaderValue"),
		acquire("x", "A", 0).is(400, "InvalidHeaderValue"),
		acquire("x", "A", -2).is(400, "InvalidHeaderValue"),
		props("x").is(200, "").state("available/unlocked").etag("e2"),
		acquire("x", "A", 15).is(201, "").leaseID("A").etag("e2"), // the ETag unchanged
		props("x").is(200, "").state("leased/locked/fixed").etag("e2"),
		acquire("x", "B", 15).is(409, "LeaseAlreadyPresent"),
		acquire("x", "A", 30).is(201, "").leaseID("A"), // the holder again: a new duration
		renew("x", "B").is(409, "LeaseIdMismatchWithLeaseOperation"),
		release("x", "B").is(409, "LeaseIdMismatchWithLeaseOperation"),
		change("x", "B", "C").is(409, "LeaseIdMismatchWithLeaseOperation"),
		renew("x", "A").is(200, "").leaseID("A").etag("e2"), // the ETag unchanged
		create("x").is(409, "BlobAlreadyExists"),
		put("x", "", "", "").is(412, "LeaseIdMissing"),
		setMeta("x", "holder=vm-1", "", "").is(412, "LeaseIdMissing"),
		deleteBlob("x", "", "").is(412, "LeaseIdMissing"),
		setMeta("x", "holder=vm-1", "B", "").is(412, "LeaseIdMismatchWithBlobOperation"),
		setMeta("x", "holder=vm-1", "A", "").is(200, "").etag("e3"),
		props("x").is(200, "").etag("e3").meta("holder=vm-1").state("leased/locked/fixed"),
		release("x", "A").is(200, "").etag("e3"),
		props("x").is(200, "").state("available/unlocked"),
		renew("x", "A").is(409, "LeaseIdMismatchWithLeaseOperation"),
		release("x", "A").is(409, "LeaseIdMismatchWithLeaseOperation"),
		setMeta("x", "holder=vm-2", "A", "").is(412, "LeaseNotPresentWithBlobOperation"),
		breakLease("x", -1).is(409, "LeaseNotPresentWithLeaseOperation"),
		change("x", "A", "B").is(409, "LeaseNotPresentWithLeaseOperation"),
		acquire("nope", "A", 15).is(404, "BlobNotFound"),
		acquireIn("-none", "x").is(404, "ContainerNotFound"),
		put("x", "holder=vm-3", "", "").is(201, "").etag("e4"),
		props("x").is(200, "").meta("holder=vm-3").etag("e4"),
		deleteBlob("x", "", "").is(202, ""),
		props("x").is(404, "BlobNotFound"),
		deleteBlob("x", "", "").is(404, "BlobNotFound"),
	}},
	{"change", []step{
		createContainer().is(201, ""),
		create("x").is(201, ""),
		acquire("x", "A", 60).is(201, "").leaseID("A"),
		change("x", "A", "B").is(200, "").leaseID("B"),
		renew("x", "A").is(409, "LeaseIdMismatchWithLeaseOperation"),
		renew("x", "B").is(200, "").leaseID("B"),
		change("x", "A", "B").is(200, "").leaseID("B"), // asking again for the ID it has
		setMeta("x", "k=v", "A", "").is(412, "LeaseIdMismatchWithBlobOperation"),
		setMeta("x", "k=v", "B", "").is(200, ""),
		release("x", "B").is(200, ""),
	}},
	{"break", []step{
		createContainer().is(201, ""),
		create("x").is(201, ""),
		acquire("x", "A", 60).is(201, ""),
		breakLease("x", 10).is(202, "").leaseTime(10),
		props("x").is(200, "").state("breaking/locked"),
		renew("x", "A").is(409, "LeaseIsBrokenAndCannotBeRenewed"),
		renew("x", "B").is(409, "LeaseIdMismatchWithLeaseOperation"),
		acquire("x", "A", 15).is(409, "LeaseIsBreakingAndCannotBeAcquired"),
		acquire("x", "B", 15).is(409, "LeaseAlreadyPresent"),
		change("x", "A", "B").is(409, "LeaseIsBreakingAndCannotBeChanged"),
		setMeta("x", "k=v", "", "").is(412, "LeaseIdMissing"),
		setMeta("x", "k=v", "A", "").is(200, ""),      // the holder may still write while it breaks
		breakLease("x", 20).is(202, "").leaseTime(10), // a longer period does not put the break off
		breakLease("x", 5).is(202, "").leaseTime(5),   // a shorter one brings it forward
		breakLease("x", -1).is(202, "").leaseTime(5),  // none leaves it
		release("x", "B").is(409, "LeaseIdMismatchWithLeaseOperation"),
		release("x", "A").is(200, ""), // a breaking lease released is free at once
		props("x").is(200, "").state("available/unlocked"),
		acquire("x", "B", 15).is(201, ""),
		breakLease("x", 0).is(202, "").leaseTime(0),
		props("x").is(200, "").state("broken/unlocked"),
		renew("x", "B").is(409, "LeaseIsBrokenAndCannotBeRenewed"),
		breakLease("x", -1).is(202, "").leaseTime(0), // broken stays broken
		setMeta("x", "k=v", "B", "").is(412, "LeaseNotPresentWithBlobOperation"),
		acquire("x", "A", 15).is(201, "").leaseID("A"), // broken: free at once
		breakLease("x", -1).is(202, "").leaseTime(15),  // no period: when the holder's period ends
		props("x").is(200, "").state("breaking/locked"),
		release("x", "A").is(200, ""),
		acquire("x", "A", 15).is(201, ""),
		breakLease("x", 20).is(202, "").leaseTime(15), // the shorter of the period and what is left
		release("x", "A").is(200, ""),
		acquire("x", "A", 15).is(201, ""),
		breakLease("x", 61).is(400, "InvalidHeaderValue"),
		breakLease("x", 0).is(202, "").leaseTime(0),
		release("x", "B").is(409, "LeaseIdMismatchWithLeaseOperation"),
		release("x", "A").is(200, ""), // a broken lease released by its ID
		props("x").is(200, "").state("available/unlocked"),
		acquire("x", "A", -1).is(201, ""),
		props("x").is(200, "").state("leased/locked/infinite"),
		renew("x", "A").is(200, ""),
		breakLease("x", -1).is(202, "").leaseTime(0), // an infinite lease without a period breaks at once
		props("x").is(200, "").state("broken/unlocked"),
		acquire("x", "B", -1).is(201, ""),
		breakLease("x", 7).is(202, "").leaseTime(7),
		props("x").is(200, "").state("breaking/locked"),
		release("x", "B").is(200, ""),
	}},
	{"conditions", []step{
		createContainer().is(201, "").etag("e1"),
		create("x").is(201, "").etag("e2"),
		setMeta("x", "k=1", "", "e2").is(200, "").etag("e3"),
		setMeta("x", "k=2", "", "e2").is(412, "ConditionNotMet"),
		setMeta("x", "k=2", "", "stale").is(412, "ConditionNotMet"),
		setMeta("x", "k=2", "", "*").is(200, "").etag("e4"),
		acquireIf("x", "A", 15, "e3").is(412, "ConditionNotMet"),
		acquireIf("x", "A", 15, "e4").is(201, "").etag("e4"),
		setMeta("x", "k=3", "A", "e3").is(412, "ConditionNotMet"),
		setMeta("x", "k=3", "A", "e4").is(200, "").etag("e5"),
		release("x", "A").is(200, ""),
		deleteBlob("x", "", "e4").is(412, "ConditionNotMet"),
		setMeta("y", "k=1", "", "").is(404, "BlobNotFound"),
		setMeta("y", "k=1", "", "e5").is(412, "ConditionNotMet"), // If-Match on a blob that is not there
		put("y", "k=1", "", "e5").is(412, "ConditionNotMet"),
		create("y").is(201, "").etag("e6"),
		deleteBlob("x", "", "e5").is(202, ""),
	}},
	{"listing", []step{
		createContainer().is(201, "").etag("e1"),
		put("a", "", "", "").is(201, "").etag("e2"),
		put("a/b", "k=1", "", "").is(201, "").etag("e3"),
		put("b", "holder=vm-1,term=3", "", "").is(201, "").etag("e4"),
		put("b~pause", "reason=x", "", "").is(201, "").etag("e5"),
		put("zulu", "", "", "").is(201, "").etag("e6"),
		put("~done/b~h1", "", "", "").is(201, "").etag("e7"),
		put("~done/b~h2", "", "", "").is(201, "").etag("e8"),
		put("\u00e9t\u00e9", "", "", "").is(201, "").etag("e9"),
		acquire("b", "A", 60).is(201, ""),
		list("", 0, "").is(200, "").pages(
			"a available e2 | a/b available e3 {k=1} | b leased e4 {holder=vm-1,term=3} | b~pause available e5 {reason=x} | " +
				"zulu available e6 | ~done/b~h1 available e7 | ~done/b~h2 available e8 | \u00e9t\u00e9 available e9"),
		listWith("b", 0, "", false).is(200, "").pages("b leased e4 | b~pause available e5"),
		list("a", 0, "").is(200, "").pages("a available e2 | a/b available e3 {k=1}"),
		list("", 3, "").is(200, "").pages(
			"a available e2 | a/b available e3 {k=1} | b leased e4 {holder=vm-1,term=3}",
			"b~pause available e5 {reason=x} | zulu available e6 | ~done/b~h1 available e7",
			"~done/b~h2 available e8 | \u00e9t\u00e9 available e9"),
		list("~done/b~", 1, "").is(200, "").pages("~done/b~h1 available e7", "~done/b~h2 available e8"),
		list("", 0, "\u0080").is(200, "").pages("\u00e9t\u00e9 available e9"), // after the helper blobs
		list("", 2, "b").is(200, "").pages(
			"b leased e4 {holder=vm-1,term=3} | b~pause available e5 {reason=x}",
			"zulu available e6 | ~done/b~h1 available e7",
			"~done/b~h2 available e8 | \u00e9t\u00e9 available e9"),
		list("b~", 0, "b~z").is(200, "").pages(""),
		list("nothing", 0, "").is(200, "").pages(""),
		// azblob v1.8.0's pager drops ListBlobsFlatOptions.StartFrom: the
		// request lists from the start.
		sdkStartFrom("\u0080").is(200, "").pages("a | a/b | b | b~pause | zulu | ~done/b~h1 | ~done/b~h2 | \u00e9t\u00e9"),
		deleteContainer().is(202, ""),
		list("", 0, "").is(404, "ContainerNotFound"),
	}},
	{"containers and account", []step{
		containerProps(true).is(404, "ContainerNotFound"),
		createIn("-none", "x").is(404, "ContainerNotFound"),
		createContainer().is(201, ""),
		createContainer().is(409, "ContainerAlreadyExists"),
		containerProps(false).is(200, "").extra("has-immutability-policy=false has-legal-hold=false"),
		// The service says whether the account has a hierarchical
		// namespace; Azurite leaves the header out.
		accountInfo().is(200, "").extra("sku-name=Standard_RAGRS account-kind=StorageV2 is-hns-enabled=false").
			onAzurite(obs{Status: 200, Extra: "sku-name=Standard_RAGRS account-kind=StorageV2"}),
		create("x").is(201, ""),
		acquire("x", "A", 15).is(201, ""),
		deleteBlob("x", "A", "").is(202, ""), // a leased blob deleted with its lease ID
		props("x").is(404, "BlobNotFound"),
		create("x").is(201, ""),
		acquire("x", "B", 15).is(201, ""), // the lease went with the blob
		deleteContainer().is(202, ""),
		props("x").is(404, "ContainerNotFound"),
	}},
	{"the service's own checks", []step{
		createContainer().is(201, ""),
		create("x").is(201, ""),
		create("y").is(201, ""),
		// The service takes lease IDs in any GUID format, compares them by
		// value and refuses anything else; Azurite takes any string as it
		// is.
		acquire("x", "!not-a-guid", 15).is(400, "InvalidHeaderValue").onAzurite(obs{Status: 201}),
		release("x", "!not-a-guid").is(400, "InvalidHeaderValue").onAzurite(obs{Status: 200}),
		acquire("y", "!{0A1B2C3D-0000-4000-8000-00000000000A}", 15).is(201, "").
			onAzurite(obs{Status: 201, LeaseID: "?{0A1B2C3D-0000-4000-8000-00000000000A}"}),
		release("y", "!0a1b2c3d-0000-4000-8000-00000000000a").is(200, "").
			onAzurite(obs{Status: 409, Code: "LeaseIdMismatchWithLeaseOperation"}),
		// At most 8 KiB of metadata, names and values together, which
		// Azurite does not check; names are C# identifiers.
		setMeta("x", "k="+strings.Repeat("v", 8191), "", "").is(200, ""),
		setMeta("x", "k="+strings.Repeat("v", 8192), "", "").is(400, "MetadataTooLarge").onAzurite(obs{Status: 200}),
		setMeta("x", "1abc=x", "", "").is(400, "InvalidMetadata"),
	}},
	{"expiry", []step{
		createContainer().is(201, ""),
		create("renewed").is(201, ""), acquire("renewed", "A", 15).is(201, ""),
		create("written").is(201, ""), acquire("written", "A", 15).is(201, ""),
		create("taken").is(201, ""), acquire("taken", "A", 15).is(201, ""),
		create("broken").is(201, ""), acquire("broken", "A", 15).is(201, ""),
		create("released").is(201, ""), acquire("released", "A", 15).is(201, ""),
		create("breaking").is(201, ""), acquire("breaking", "A", 15).is(201, ""),
		breakLease("breaking", -1).is(202, "").leaseTime(15),
		create("short").is(201, ""), acquire("short", "A", 60).is(201, ""),
		breakLease("short", 3).is(202, "").leaseTime(3),
		create("rewritten").is(201, ""),
		props("rewritten").is(200, "").created("c1"),
		wait(1200 * time.Millisecond),
		put("rewritten", "", "", "").is(201, ""),
		props("rewritten").is(200, "").created("c2"), // a blob written over is new (as Azurite)
		wait(15500 * time.Millisecond),               // every 15 s lease has expired
		props("renewed").is(200, "").state("expired/unlocked"),
		props("short").is(200, "").state("broken/unlocked"),
		list("", 0, "").is(200, "").pages("breaking broken e7 | broken expired e5 | released expired e6 | " +
			"renewed expired e2 | rewritten available e10 | short broken e8 | taken expired e4 | written expired e3"),
		setMeta("renewed", "k=v", "A", "").is(412, "LeaseNotPresentWithBlobOperation"),
		renew("renewed", "A").is(200, "").leaseID("A"), // nobody touched it: its ID renews
		props("renewed").is(200, "").state("leased/locked/fixed"),
		release("renewed", "A").is(200, ""),
		setMeta("written", "k=v", "", "").is(200, ""), // a write after expiry ...
		props("written").is(200, "").state("available/unlocked"),
		renew("written", "A").is(409, "LeaseIdMismatchWithLeaseOperation"), // ... ends the ID's claim
		acquire("taken", "B", 15).is(201, ""),                              // anyone may acquire an expired lease
		renew("taken", "A").is(409, "LeaseIdMismatchWithLeaseOperation"),
		breakLease("broken", -1).is(202, "").leaseTime(0), // an expired lease breaks at once
		props("broken").is(200, "").state("broken/unlocked"),
		renew("broken", "A").is(409, "LeaseIsBrokenAndCannotBeRenewed"),
		release("released", "A").is(200, ""), // its ID still releases an expired lease
		props("released").is(200, "").state("available/unlocked"),
		props("breaking").is(200, "").state("broken/unlocked"),
		acquire("breaking", "B", 15).is(201, ""),
		props("short").is(200, "").state("broken/unlocked"),
		acquire("short", "B", 15).is(201, ""),
	}},
}

func TestConformance(t *testing.T) {
	cs := azuriteConnectionString(t)
	if cs == "" {
		t.Log("LEADERRUN_TEST_CONNECTION_STRING is not set (scripts/azurite.sh start prints one): the model is checked against the scenarios alone")
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			var model []obs
			synctest.Test(t, func(t *testing.T) {
				model = play(t, modelTarget(blobsim.New()), sc.steps)
			})
			check(t, "model", sc.steps, model, false)
			if !hasWaits(sc.steps) {
				srv := httptest.NewServer(blobsim.New())
				defer srv.Close()
				overHTTP := play(t, stringTarget("model over HTTP", blobsim.ConnectionStringFor(srv.URL)), sc.steps)
				same(t, "model over HTTP", "model", sc.steps, overHTTP, model, false, true)
			}
			if cs == "" {
				return
			}
			azurite := play(t, stringTarget("Azurite", cs), sc.steps)
			check(t, "Azurite", sc.steps, azurite, true)
			same(t, "model", "Azurite", sc.steps, model, azurite, true, true)
		})
	}
}

func hasWaits(steps []step) bool {
	for _, s := range steps {
		if s.wait > 0 {
			return true
		}
	}
	return false
}

// check compares each answer with the step's want (Azurite's, for
// Azurite, where the step has one).
func check(t *testing.T, who string, steps []step, got []obs, azurite bool) {
	t.Helper()
	for i, s := range steps {
		if s.wait > 0 {
			continue
		}
		want := s.want
		if azurite && s.azurite != nil {
			want = *s.azurite
		}
		if !got[i].matches(want, azurite) {
			t.Errorf("%s, step %d, %s:\n\tgot  %v\n\twant %v", who, i+1, s.what, got[i], want)
		}
	}
}

// same compares two targets' answers, whole (but for the steps where
// Azurite differs, when skipAzurite; and when realTime, one of them on
// real time and the other not, for a lease time a second apart and the
// second a blob was made in, unless the step names it).
func same(t *testing.T, a, b string, steps []step, x, y []obs, skipAzurite, realTime bool) {
	t.Helper()
	for i, s := range steps {
		if s.wait > 0 || skipAzurite && s.azurite != nil {
			continue
		}
		xi, yi := x[i], y[i]
		if realTime { // one of them on real time, the other not: see obs.matches
			if secondApart(xi.LeaseTime, yi.LeaseTime) {
				yi.LeaseTime = xi.LeaseTime
			}
			if s.want.Created == "" { // which second a blob was made in
				xi.Created, yi.Created = "", ""
			}
		}
		if !reflect.DeepEqual(xi, yi) {
			t.Errorf("step %d, %s:\n\t%-8s %v\n\t%-8s %v", i+1, s.what, a, x[i], b, y[i])
		}
	}
}
