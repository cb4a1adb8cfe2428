package e2e

// leaderrun doctor against the emulator, and the account settings the
// emulator cannot take, given by the fault proxy in front of it: each is
// named by doctor and, where a run (or status, list, pause, resume, break)
// meets it, in that command's one error line.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// lrResult is one leaderrun process: its exit status and outputs.
type lrResult struct {
	code           int
	stdout, stderr string
}

func (r lrResult) String() string {
	return "exit " + strconv.Itoa(r.code) + "\nstdout:\n" + r.stdout + "\nstderr:\n" + r.stderr
}

// runLR runs the leaderrun binary with env added to a clean environment.
func runLR(t *testing.T, bin string, env []string, args ...string) lrResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(testenv.BaseEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := lrResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("leaderrun %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// doctorReport is doctor -o json.
type doctorReport struct {
	OK     bool `json:"ok"`
	Checks []struct {
		Name, Status, Detail string
	} `json:"checks"`
}

func parseDoctor(t *testing.T, r lrResult) doctorReport {
	t.Helper()
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor -o json: %v\n%s", err, r)
	}
	return rep
}

// check is the check named name; it fails the test if there is none.
func (rep doctorReport) check(t *testing.T, name string) (status, detail string) {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c.Status, c.Detail
		}
	}
	t.Fatalf("doctor reported no %q check: %+v", name, rep.Checks)
	return "", ""
}

// wantCheck fails unless check name has status and its detail holds every
// one of parts.
func (rep doctorReport) wantCheck(t *testing.T, name, status string, parts ...string) {
	t.Helper()
	got, detail := rep.check(t, name)
	if got != status {
		t.Errorf("%s: %s (%s), want %s", name, got, detail, status)
	}
	for _, p := range parts {
		if !strings.Contains(detail, p) {
			t.Errorf("%s: %q does not say %q", name, detail, p)
		}
	}
}

// noSecret fails if the key or a SAS signature shows in r's output.
func noSecret(t *testing.T, r lrResult, secrets ...string) {
	t.Helper()
	out := r.stdout + r.stderr
	for _, s := range append(secrets, "sig=", "AccountKey") {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("a secret (%.12s…) is in the output:\n%s", s, r)
		}
	}
}

// scratchLeft lists the container's blobs whose names hold "~doctor-".
func scratchLeft(t *testing.T, cs, name string) []string {
	t.Helper()
	cc, err := container.NewClientFromConnectionString(cs, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	pager := cc.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			if strings.Contains(*b.Name, "~doctor-") {
				left = append(left, *b.Name)
			}
		}
	}
	return left
}

func TestDoctor(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	account, key := testenv.ConnField(cs, "AccountName"), testenv.ConnField(cs, "AccountKey")
	endpoint := testenv.ConnField(cs, "BlobEndpoint")

	t.Run("all ok", func(t *testing.T) {
		name := "doctor-" + testenv.RandHex(6)
		env := []string{"AZURE_STORAGE_CONNECTION_STRING=" + cs, "LEADERRUN_CONTAINER=" + name}
		r := runLR(t, bin, env, "doctor", "-l", "cron/report")
		if r.code != 0 {
			t.Fatalf("doctor: %s", r)
		}
		for _, want := range []string{"credential", "api version", "create", "read", "lease", "metadata", "list", "delete", "clock", "round trip"} {
			if !strings.Contains(r.stdout, want+" ") {
				t.Errorf("the table has no %q row:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "WARNING") || strings.Contains(r.stdout, "FAILED") || r.stderr != "" {
			t.Errorf("doctor against the emulator is not all ok:\n%s", r)
		}
		noSecret(t, r, key)

		r = runLR(t, bin, env, "doctor", "-l", "cron/report", "-o", "json", "--lease-duration", "30")
		rep := parseDoctor(t, r)
		if r.code != 0 || !rep.OK {
			t.Fatalf("doctor -o json: %s", r)
		}
		for _, c := range rep.Checks {
			if c.Status != "ok" {
				t.Errorf("%s: %s: %s", c.Name, c.Status, c.Detail)
			}
		}
		rep.wantCheck(t, "credential", "ok", "shared key of account "+account, "AZURE_STORAGE_CONNECTION_STRING")
		rep.wantCheck(t, "api version", "ok", "2026-06-06")
		rep.wantCheck(t, "account", "ok", "StorageV2", "hierarchical namespace off")
		rep.wantCheck(t, "container", "ok", "no immutability policy, no legal hold")
		rep.wantCheck(t, "round trip", "ok", "p50 ", "p95 ", "--lease-duration 30s", "renewal is sent every 10s")
		rep.wantCheck(t, "lease name", "ok", "cron/report does not exist yet")
		if left := scratchLeft(t, cs, name); len(left) != 0 {
			t.Errorf("doctor left %v behind", left)
		}
	})

	t.Run("wrong key", func(t *testing.T) {
		const wrong = "d3Jvbmcga2V5IHdyb25nIGtleSB3cm9uZyBrZXkgd3Jvbmcga2V5IHdyb25nIGtleQ=="
		env := []string{"AZURE_STORAGE_ACCOUNT=" + account, "AZURE_STORAGE_KEY=" + wrong, "LEADERRUN_ENDPOINT=" + endpoint}
		r := runLR(t, bin, env, "doctor", "-o", "json")
		if r.code != 2 {
			t.Fatalf("doctor with a wrong key: %s, want exit 2", r)
		}
		rep := parseDoctor(t, r)
		rep.wantCheck(t, "credential", "failed", "shared key of account "+account+", from AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY", "refused: 403")
		if rep.OK {
			t.Error("ok is true with a failed check")
		}
		if !strings.Contains(r.stderr, "credential") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("want one line naming the credential check on stderr:\n%s", r)
		}
		noSecret(t, r, wrong, strings.TrimRight(wrong, "="))
		// The table says the same.
		r = runLR(t, bin, env, "doctor")
		if r.code != 2 || !regexp.MustCompile(`(?m)^credential +FAILED +shared key`).MatchString(r.stdout) {
			t.Errorf("doctor's table with a wrong key:\n%s", r)
		}
	})

	t.Run("SAS", func(t *testing.T) {
		name := "doctor-sas-" + testenv.RandHex(6)
		if r := runLR(t, bin, []string{"AZURE_STORAGE_CONNECTION_STRING=" + cs}, "--container", name, "-l", "job", "--", "true"); r.code != 0 {
			t.Fatalf("a run to create the container: %s", r)
		}
		cred, err := blob.NewSharedKeyCredential(account, key)
		if err != nil {
			t.Fatal(err)
		}
		token := func(p sas.ContainerPermissions) (string, string) {
			qp, err := sas.BlobSignatureValues{
				Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
				ContainerName: name, Permissions: p.String(),
			}.SignWithSharedKey(cred)
			if err != nil {
				t.Fatal(err)
			}
			return qp.Encode(), qp.Signature()
		}
		sasEnv := func(tok string) []string {
			return []string{"AZURE_STORAGE_ACCOUNT=" + account, "LEADERRUN_ENDPOINT=" + endpoint,
				"AZURE_STORAGE_SAS_TOKEN=" + tok, "LEADERRUN_CONTAINER=" + name}
		}

		// Everything a run and the fleet commands need: all ok, although a
		// container SAS may not read the container's properties.
		tok, sig := token(sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true})
		r := runLR(t, bin, sasEnv(tok), "doctor", "-l", "job", "-o", "json")
		rep := parseDoctor(t, r)
		if r.code != 0 || !rep.OK {
			t.Errorf("doctor with a SAS racwdl: %s, want exit 0", r)
		}
		rep.wantCheck(t, "container", "ok", "no immutability policy or legal hold stops a write")
		noSecret(t, r, sig)

		// Without list and delete: a run works; what needs them is named.
		tok, sig = token(sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true})
		r = runLR(t, bin, sasEnv(tok), "doctor", "-l", "job", "-o", "json")
		rep = parseDoctor(t, r)
		if r.code != 1 || !rep.OK {
			t.Errorf("doctor with a SAS without list and delete: %s, want exit 1 and ok", r)
		}
		rep.wantCheck(t, "credential", "ok", "SAS token from AZURE_STORAGE_SAS_TOKEN", "permissions racw")
		rep.wantCheck(t, "create", "ok")
		rep.wantCheck(t, "lease", "ok")
		rep.wantCheck(t, "metadata", "ok")
		rep.wantCheck(t, "list", "warning", "403", "lacks the permission list (l)")
		rep.wantCheck(t, "delete", "warning", "403", "lacks the permission delete (d)", "left behind")
		rep.wantCheck(t, "lease name", "ok", "job: available, term 1")
		noSecret(t, r, sig)
		if left := scratchLeft(t, cs, name); len(left) != 1 {
			t.Errorf("want the one scratch blob a SAS without delete could not remove, got %v", left)
		}

		// Read only: a run cannot create or lease: exit 2, each named.
		tok, sig = token(sas.ContainerPermissions{Read: true, List: true})
		r = runLR(t, bin, sasEnv(tok), "doctor", "-l", "job", "-o", "json")
		rep = parseDoctor(t, r)
		if r.code != 2 || rep.OK {
			t.Errorf("doctor with a read-only SAS: %s, want exit 2", r)
		}
		rep.wantCheck(t, "create", "failed", "lacks the permission create (c) or write (w)")
		rep.wantCheck(t, "read", "ok")
		rep.wantCheck(t, "list", "ok")
		noSecret(t, r, sig)
	})
}

// errorLine is the one [ERROR] line of a command's stderr; it fails the
// test if there is not exactly one.
func errorLine(t *testing.T, what string, r lrResult) string {
	t.Helper()
	var lines []string
	for l := range strings.SplitSeq(r.stderr, "\n") {
		if strings.Contains(l, "[ERROR]") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Errorf("%s: want one error line: %s", what, r)
		return strings.Join(lines, "\n")
	}
	return lines[0]
}

func TestDoctorAccountSettings(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	key := testenv.ConnField(cs, "AccountKey")
	p, through := faultproxy.Start(t, cs)
	name := "settings-" + testenv.RandHex(6)
	env := []string{"AZURE_STORAGE_CONNECTION_STRING=" + through, "LEADERRUN_CONTAINER=" + name}
	if r := runLR(t, bin, env, "-l", "job", "--", "true"); r.code != 0 {
		t.Fatalf("a run before the settings: %s", r)
	}

	// cmdLine is a command line that meets a setting, and its exit status.
	type cmdLine struct {
		args []string
		code int
	}
	tests := []struct {
		name    string
		account faultproxy.Account
		code    int    // doctor's exit status
		check   string // the check that names it
		status  string
		says    []string
		cmds    []cmdLine // commands that meet it
		cmdSays string    // what their one error line says
	}{
		{name: "hierarchical namespace", account: faultproxy.Account{HNS: true}, code: 1, check: "account", status: "warning",
			says: []string{"hierarchical namespace on", "directories show in listings", `no lease may be named "cron"`}},
		{name: "legal hold", account: faultproxy.Account{LegalHold: true}, code: 2, check: "container", status: "failed",
			says:    []string{name + " has a legal hold", "refuses every change to a blob already there"},
			cmdSays: "container " + name + " has a legal hold",
			cmds: []cmdLine{
				{[]string{"-l", "job", "--no-wait", "--", "true"}, 69},
				{[]string{"resume", "-l", "paused"}, 69},
			}},
		{name: "immutability policy", account: faultproxy.Account{ImmutabilityPolicy: true}, code: 2, check: "container", status: "failed",
			says:    []string{name + " has an immutability policy"},
			cmdSays: "container " + name + " has an immutability policy",
			cmds:    []cmdLine{{[]string{"-l", "job", "--no-wait", "--", "true"}, 69}}},
		{name: "shared key disabled", account: faultproxy.Account{SharedKeyDisabled: true}, code: 2, check: "credential", status: "failed",
			says:    []string{"shared key of account", "403 KeyBasedAuthenticationNotPermitted", "shared-key access is disabled", "use Microsoft Entra ID"},
			cmdSays: "shared-key access is disabled on this storage account",
			cmds: []cmdLine{
				{[]string{"-l", "job", "--no-wait", "--", "true"}, 69},
				{[]string{"status", "-l", "job"}, 69},
				{[]string{"list"}, 69},
				{[]string{"pause", "-l", "job"}, 69},
				{[]string{"resume", "-l", "job"}, 69},
				{[]string{"break", "-l", "job"}, 69},
			}},
		{name: "older API version", account: faultproxy.Account{MaxVersion: "2019-07-07"}, code: 2, check: "api version", status: "failed",
			says:    []string{"400 InvalidHeaderValue", "does not accept API version 2026-06-06", "Azure Stack Hub"},
			cmdSays: "the service does not accept API version 2026-06-06",
			cmds: []cmdLine{
				{[]string{"-l", "job", "--no-wait", "--", "true"}, 69},
				{[]string{"status", "-l", "job"}, 69},
				{[]string{"list"}, 69},
			}},
		{name: "clock 3 minutes off", account: faultproxy.Account{ClockOffset: 3 * time.Minute}, code: 1, check: "clock", status: "warning",
			says: []string{"this host's clock is 3m0s behind the service's"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A pause to resume, made before the setting.
			p.Set(faultproxy.Mode{})
			if r := runLR(t, bin, env, "pause", "-l", "paused"); r.code != 0 {
				t.Fatalf("pause: %s", r)
			}
			p.Set(faultproxy.Mode{Account: tt.account})
			r := runLR(t, bin, env, "doctor", "-l", "cron/report", "-o", "json")
			if r.code != tt.code {
				t.Errorf("doctor: %s, want exit %d", r, tt.code)
			}
			rep := parseDoctor(t, r)
			rep.wantCheck(t, tt.check, tt.status, tt.says...)
			noSecret(t, r, key)
			if tt.account.LegalHold || tt.account.ImmutabilityPolicy {
				rep.wantCheck(t, "create", "warning", "not tried")
			}
			for _, c := range tt.cmds {
				what := strings.Join(c.args, " ")
				r := runLR(t, bin, env, c.args...)
				if r.code != c.code {
					t.Errorf("%s: %s, want exit %d", what, r, c.code)
				}
				if line := errorLine(t, what, r); !strings.Contains(line, tt.cmdSays) {
					t.Errorf("%s: the error line does not say %q: %s", what, tt.cmdSays, line)
				}
				noSecret(t, r, key)
			}
			p.Set(faultproxy.Mode{})
			if left := scratchLeft(t, cs, name); len(left) != 0 {
				t.Errorf("doctor left %v behind", left)
			}
		})
	}
}

// TestDirectories: the directories of a hierarchical-namespace account,
// which list as zero-length blobs with hdi_isfolder=true, are not leases:
// list and completion leave them out, and a lease of that name is refused.
func TestDirectories(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	name := "hns-" + testenv.RandHex(6)
	env := []string{"AZURE_STORAGE_CONNECTION_STRING=" + cs, "LEADERRUN_CONTAINER=" + name}
	if r := runLR(t, bin, env, "-l", "cron/report", "--", "true"); r.code != 0 {
		t.Fatalf("run: %s", r)
	}
	// What an HNS account shows for the directory the run's blob made.
	bb, err := blockblob.NewClientFromConnectionString(cs, name, "cron", nil)
	if err != nil {
		t.Fatal(err)
	}
	yes := "true"
	if _, err := bb.Upload(context.Background(), streaming.NopCloser(bytes.NewReader(nil)),
		&blockblob.UploadOptions{Metadata: map[string]*string{"hdi_isfolder": &yes}}); err != nil {
		t.Fatal(err)
	}

	r := runLR(t, bin, env, "list", "-o", "json")
	var leases []struct{ Lease string }
	if err := json.Unmarshal([]byte(r.stdout), &leases); r.code != 0 || err != nil {
		t.Fatalf("list: %v %s", err, r)
	}
	if len(leases) != 1 || leases[0].Lease != "cron/report" {
		t.Errorf("list shows %+v, want cron/report alone", leases)
	}

	r = runLR(t, bin, env, "__complete", "status", "-l", "cr")
	if !strings.Contains(r.stdout, "cron/report") || strings.Contains(r.stdout, "cron\n") {
		t.Errorf("completion of cr: %s", r)
	}

	r = runLR(t, bin, env, "-l", "cron", "--no-wait", "--", "true")
	if line := errorLine(t, "run -l cron", r); r.code != 64 || !strings.Contains(line, `"cron" is a directory on this account`) {
		t.Errorf("a lease named like a directory: %s", r)
	}

	r = runLR(t, bin, env, "doctor", "-l", "cron", "-o", "json")
	if r.code != 2 {
		t.Errorf("doctor -l cron: %s, want exit 2", r)
	}
	parseDoctor(t, r).wantCheck(t, "lease name", "failed", `"cron" is a directory`)
}
