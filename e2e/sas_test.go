package e2e

// Credentials that may read the lease blob but not list the container (a
// SAS for that blob alone): status falls back to one read of the lease
// blob, and the SAS's signature never reaches the output.

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

func TestStatusWithBlobSAS(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	endpoint := testenv.ConnField(cs, "BlobEndpoint")
	name := "sas-" + testenv.RandHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A run creates the container and the lease blob, with a key.
	run := exec.CommandContext(ctx, bin, "-l", "job", "--container", name, "--", "true")
	run.Env = append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+cs)
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}

	cred, err := blob.NewSharedKeyCredential(testenv.ConnField(cs, "AccountName"), testenv.ConnField(cs, "AccountKey"))
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.BlobSignatureValues{
		Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
		ContainerName: name, BlobName: "job",
		Permissions: (&sas.BlobPermissions{Read: true}).String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	token := qp.Encode()

	// The blob SAS may read the blob but not list the container.
	cc, err := container.NewClientWithNoCredential(endpoint+"/"+name+"?"+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewListBlobsFlatPager(nil).NextPage(ctx); err == nil {
		t.Fatal("a blob SAS listed the container: the emulator does not refuse it, so the fallback is not exercised")
	}

	status := exec.CommandContext(ctx, bin, "status", "-l", "job", "--container", name, "--log-level", "trace")
	status.Env = append(testenv.BaseEnv(), "AZURE_STORAGE_ACCOUNT="+testenv.ConnField(cs, "AccountName"),
		"LEADERRUN_ENDPOINT="+endpoint, "AZURE_STORAGE_SAS_TOKEN="+token)
	out, err := status.CombinedOutput()
	if err != nil {
		t.Fatalf("status with a blob SAS: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "may not list the lease's blobs") || !strings.Contains(string(out), "term:") {
		t.Errorf("status with a blob SAS did not fall back to reading the lease blob:\n%s", out)
	}
	if sig := qp.Signature(); strings.Contains(string(out), sig) || strings.Contains(string(out), "sig=") {
		t.Errorf("the SAS signature reached the output:\n%s", out)
	}
}
