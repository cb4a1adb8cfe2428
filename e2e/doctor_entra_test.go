package e2e

// doctor with Microsoft Entra ID (entra_test.go's managed identity and
// Azurite over HTTPS with bearer tokens): the credential check names the
// source DefaultAzureCredential used, and no token reaches the output.

import (
	"strconv"
	"strings"
	"testing"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

func TestDoctorManagedIdentity(t *testing.T) {
	azurite := azuriteBinary(t)
	bin := leaderrunBinary(t)
	dir := t.TempDir()
	cert, key := writeCertificate(t, dir)
	mi := newIdentityEndpoint(t)
	port := startOAuthAzurite(t, azurite, cert, key)

	env := []string{
		"AZURE_STORAGE_ACCOUNT=devstoreaccount1",
		"LEADERRUN_ENDPOINT=https://127.0.0.1:" + strconv.Itoa(port) + "/devstoreaccount1",
		"LEADERRUN_CONTAINER=" + "doctor-mi-" + testenv.RandHex(6),
		"SSL_CERT_FILE=" + cert,
		"IDENTITY_ENDPOINT=" + mi.url,
		"IDENTITY_HEADER=" + identityHeader,
		"HOME=" + dir, // no Azure CLI login to fall back on
		"MSI_ENDPOINT=", "MSI_SECRET=", "IMDS_ENDPOINT=",
	}
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
