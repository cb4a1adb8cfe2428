package e2e

// doctor with Microsoft Entra ID (entra_test.go's managed identity and
// Azurite over HTTPS with bearer tokens): the credential check names the
// source DefaultAzureCredential used, and no token reaches the output.

import (
	"strings"
	"testing"
)

func TestDoctorManagedIdentity(t *testing.T) {
	bin, _, env, mi := managedIdentity(t, "doctor-mi-")
	r := runLR(t, bin, env, "doctor", "-l", "mi/job", "-o", "json")
	if r.code != 0 {
		t.Fatalf("doctor with a managed identity: %s", r)
	}
	rep := parseDoctor(t, r)
	rep.wantCheck(t, "credential", "ok", "Microsoft Entra ID through DefaultAzureCredential: managed identity (ManagedIdentityCredential)")
	rep.wantCheck(t, "lease", "ok")
	if mi.tokens() == 0 {
		t.Error("no token was asked of the managed identity endpoint")
	}
	for _, token := range mi.issued() {
		for part := range strings.SplitSeq(token, ".") {
			if len(part) > 8 && strings.Contains(r.stdout+r.stderr, part) {
				t.Errorf("the output holds the token:\n%s", r)
			}
		}
	}
}
