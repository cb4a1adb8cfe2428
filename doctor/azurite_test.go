package doctor

// Run against the Azurite emulator, and through the fault proxy in front of
// it for what the emulator cannot answer: the checks, in order, each with
// the status and the words the service's answer calls for.

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
	"github.com/leaderrun/leaderrun/lease"
)

func azuriteConnectionString(t *testing.T) string {
	t.Helper()
	cs := os.Getenv("LEADERRUN_TEST_CONNECTION_STRING")
	if cs == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("LEADERRUN_TEST_CONNECTION_STRING is not set and CI=true: start the emulator with scripts/azurite.sh start")
		}
		t.Skip("LEADERRUN_TEST_CONNECTION_STRING is not set (scripts/azurite.sh start prints one)")
	}
	return cs
}

// run is Run with a lease duration of 15s and a kill grace of 10s; it
// fails the test on an error.
func run(t *testing.T, client lease.ClientConfig) report {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	checks, err := Run(ctx, Config{Client: client, KillGrace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range checks {
		names = append(names, c.Name)
	}
	if !slices.IsSortedFunc(names, func(a, b string) int { return slices.Index(checkOrder, a) - slices.Index(checkOrder, b) }) {
		t.Errorf("checks out of order: %v", names)
	}
	return report(checks)
}

type report []Check

// want fails unless check name has status and its detail holds every one
// of parts.
func (r report) want(t *testing.T, name string, status CheckStatus, parts ...string) {
	t.Helper()
	i := slices.IndexFunc(r, func(c Check) bool { return c.Name == name })
	if i < 0 {
		t.Errorf("no %q check in %+v", name, r)
		return
	}
	if r[i].Status != status {
		t.Errorf("%s: %s (%s), want %s", name, r[i].Status, r[i].Detail, status)
	}
	for _, p := range parts {
		if !strings.Contains(r[i].Detail, p) {
			t.Errorf("%s: %q does not say %q", name, r[i].Detail, p)
		}
	}
}

// scratchLeft lists the scratch blobs left in the container.
func scratchLeft(t *testing.T, cs, container string) []string {
	t.Helper()
	c, err := lease.NewContainer(lease.ClientConfig{ConnectionString: cs, Container: container})
	if err != nil {
		t.Fatal(err)
	}
	names, err := c.ListNames(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(names, func(n string) bool { return !strings.Contains(n, lease.MarkerSep+scratchMarker) })
}

func TestAzuriteRun(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()

	t.Run("all ok", func(t *testing.T) {
		name := "doctor-" + testenv.RandHex(6)
		r := run(t, lease.ClientConfig{ConnectionString: cs, Container: name, Blob: "cron/report"})
		if len(r) != len(checkOrder) {
			t.Errorf("%d checks, want all %d: %+v", len(r), len(checkOrder), r)
		}
		for _, c := range r {
			if c.Status != CheckOK {
				t.Errorf("%s: %s: %s", c.Name, c.Status, c.Detail)
			}
		}
		r.want(t, CheckContainer, CheckOK, name+" did not exist: created")
		r.want(t, CheckCreate, CheckOK, "cron/report~doctor-")
		r.want(t, CheckLease, CheckOK, "acquire (15s), renew and release allowed")
		r.want(t, CheckLeaseName, CheckOK, "cron/report does not exist yet")
		if left := scratchLeft(t, cs, name); len(left) != 0 {
			t.Errorf("left behind: %v", left)
		}
	})

	t.Run("no lease name", func(t *testing.T) {
		name := "doctor-" + testenv.RandHex(6)
		r := run(t, lease.ClientConfig{ConnectionString: cs, Container: name})
		r.want(t, CheckCreate, CheckOK, "leaderrun-doctor~doctor-")
		if slices.ContainsFunc(r, func(c Check) bool { return c.Name == CheckLeaseName }) {
			t.Errorf("a lease name check without a lease name: %+v", r)
		}
	})

	// A SAS for a container that does not exist, which it may not create:
	// every request on the blob is answered 404 ContainerNotFound, which
	// is a refusal of each, not a blob that is missing.
	t.Run("SAS for a missing container", func(t *testing.T) {
		name := "doctor-" + testenv.RandHex(6)
		account, key := testenv.ConnField(cs, "AccountName"), testenv.ConnField(cs, "AccountKey")
		cred, err := blob.NewSharedKeyCredential(account, key)
		if err != nil {
			t.Fatal(err)
		}
		perms := sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}
		qp, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
			ContainerName: name, Permissions: perms.String()}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		r := run(t, lease.ClientConfig{Endpoint: testenv.ConnField(cs, "BlobEndpoint"), SASToken: qp.Encode(), Container: name, Blob: "job"})
		r.want(t, CheckCredential, CheckOK, "SAS token from AZURE_STORAGE_SAS_TOKEN (permissions racwdl")
		r.want(t, CheckContainer, CheckWarning, "cannot tell whether "+name)
		r.want(t, CheckCreate, CheckFailed, "404 ContainerNotFound")
		r.want(t, CheckRead, CheckFailed, "404 ContainerNotFound")
		r.want(t, CheckList, CheckWarning, "404 ContainerNotFound")
		r.want(t, CheckRoundTrip, CheckWarning, "not measured")
		for _, c := range r {
			if strings.Contains(c.Detail, qp.Signature()) {
				t.Errorf("%s holds the SAS signature: %s", c.Name, c.Detail)
			}
		}
	})
}

func TestAzuriteRunThroughTheProxy(t *testing.T) {
	cs := azuriteConnectionString(t)
	p, through := faultproxy.Start(t, cs)
	tests := []struct {
		name  string
		mode  faultproxy.Mode
		check string
		want  CheckStatus
		says  []string
		// more: further checks that the answer decides
		more map[string]CheckStatus
	}{
		{"legal hold", faultproxy.Mode{Account: faultproxy.Account{LegalHold: true}}, CheckContainer, CheckFailed,
			[]string{"has a legal hold: the service refuses every change", "use a container without one"},
			map[string]CheckStatus{CheckCreate: CheckWarning, CheckLease: CheckWarning, CheckRead: CheckOK}},
		{"both settings", faultproxy.Mode{Account: faultproxy.Account{LegalHold: true, ImmutabilityPolicy: true}}, CheckContainer, CheckFailed,
			[]string{"has an immutability policy and a legal hold: "}, nil},
		{"shared key disabled", faultproxy.Mode{Account: faultproxy.Account{SharedKeyDisabled: true}}, CheckCredential, CheckFailed,
			[]string{"refused: 403 KeyBasedAuthenticationNotPermitted", "use Microsoft Entra ID"},
			map[string]CheckStatus{CheckClock: CheckOK}},
		{"older API version", faultproxy.Mode{Account: faultproxy.Account{MaxVersion: "2019-07-07"}}, CheckVersion, CheckFailed,
			[]string{"400 InvalidHeaderValue", "does not accept API version"},
			map[string]CheckStatus{CheckCredential: CheckWarning}},
		{"hierarchical namespace", faultproxy.Mode{Account: faultproxy.Account{HNS: true}}, CheckAccount, CheckWarning,
			[]string{"hierarchical namespace on", `no lease may be named "cron"`}, nil},
		{"clock ahead", faultproxy.Mode{Account: faultproxy.Account{ClockOffset: -time.Minute}}, CheckClock, CheckWarning,
			[]string{"1m0s ahead of the service's"}, nil},
		{"a permission missing", faultproxy.Mode{ErrorRate: 1, ErrorStatus: 403, ErrorCode: "AuthorizationPermissionMismatch"}, CheckRead, CheckFailed,
			[]string{"refused: 403 AuthorizationPermissionMismatch"},
			map[string]CheckStatus{CheckCredential: CheckOK, CheckContainer: CheckWarning, CheckCreate: CheckFailed}},
		{"an unexpected answer", faultproxy.Mode{ErrorRate: 1, ErrorStatus: 500}, CheckEndpoint, CheckFailed,
			[]string{"answered 500 InternalError"}, map[string]CheckStatus{CheckCredential: CheckWarning}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "doctor-" + testenv.RandHex(6)
			p.Set(faultproxy.Mode{})
			if c, err := lease.NewContainer(lease.ClientConfig{ConnectionString: cs, Container: name}); err != nil {
				t.Fatal(err)
			} else if err := c.Create(t.Context()); err != nil {
				t.Fatal(err)
			}
			p.Set(tt.mode)
			r := run(t, lease.ClientConfig{ConnectionString: through, Container: name, Blob: "cron/report"})
			p.Set(faultproxy.Mode{})
			r.want(t, tt.check, tt.want, tt.says...)
			for check, status := range tt.more {
				r.want(t, check, status)
			}
			if left := scratchLeft(t, cs, name); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
