package lease

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// Tests against a real blob service: the Azurite emulator
// (scripts/azurite.sh start prints the connection string).

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

// uniqueContainer lets tests and packages share one emulator.
func uniqueContainer(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "t-" + hex.EncodeToString(b)
}

func azuriteBlob(t *testing.T, cfg ClientConfig) *Blob {
	t.Helper()
	c, err := NewLeaseBlob(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sdkContainer and sdkBlob are the Azure SDK's clients for the same
// storage: tests cross-check what leaderrun's own requests did.
func sdkContainer(t *testing.T, cs, name string) *container.Client {
	t.Helper()
	cc, err := container.NewClientFromConnectionString(cs, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// sdkBlob addresses blobName (unescaped) the SDK's way: the container
// client escapes the name itself.
func sdkBlob(t *testing.T, cs, containerName, blobName string) *blockblob.Client {
	t.Helper()
	return sdkContainer(t, cs, containerName).NewBlockBlobClient(blobName)
}

func azuriteElector(t *testing.T, c *Blob, identity string, edit func(*Config)) *Elector {
	t.Helper()
	cfg := Config{Duration: 15 * time.Second, KillGrace: 10 * time.Second, Identity: identity, Version: "test"}
	if edit != nil {
		edit(&cfg)
	}
	e, err := NewElector(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustProps(t *testing.T, c *Blob) *Properties {
	t.Helper()
	p, err := c.Properties(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAzuriteLifecycle(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "jobs/nightly report"}
	ca, cb := azuriteBlob(t, cfg), azuriteBlob(t, cfg)
	ea, eb := azuriteElector(t, ca, "vm-a", nil), azuriteElector(t, cb, "vm-b", nil)

	if p := mustProps(t, ca); p.Exists || p.State != StateAbsent {
		t.Fatalf("fresh container: %+v", p)
	}

	// Term 1: A creates the container and the blob.
	la, err := ea.Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	p := mustProps(t, ca)
	if !p.Exists || p.State != StateLeased || p.Holder != "vm-a" || p.Term != 1 || la.Term != 1 ||
		p.LeaseDuration != 15*time.Second || p.Date.IsZero() || p.AcquiredAt.IsZero() || p.Metadata["leaderrunversion"] != "test" {
		t.Fatalf("after acquire: %+v", p)
	}

	// B cannot have it.
	_, err = eb.Acquire(ctx, WaitOptions{NoWait: true})
	var he *HeldError
	if !errors.As(err, &he) || he.Holder != "vm-a" || he.Term != 1 {
		t.Fatalf("B: %v, want held by vm-a at term 1", err)
	}

	// Renew, record a run.
	if _, err := ca.api.renewLease(ctx, la.ID); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if err := la.RecordRunStart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := la.RecordRunEnd(ctx, 3); err != nil {
		t.Fatal(err)
	}
	p = mustProps(t, ca)
	if r := p.LastRun; r == nil || r.Holder != "vm-a" || r.Start.IsZero() || r.End.Before(r.Start) || r.ExitCode == nil || *r.ExitCode != 3 {
		t.Errorf("last run: %+v", p.LastRun)
	}

	// Release; B takes term 2.
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if p := mustProps(t, ca); p.State != StateAvailable {
		t.Errorf("after release: %s", p.State)
	}
	lb, err := eb.Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if lb.Term != 2 {
		t.Errorf("B's term = %d, want 2", lb.Term)
	}

	// Broken at once (period 0): A takes term 3.
	if _, err := ca.BreakLease(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if p := mustProps(t, ca); p.State != StateBroken {
		t.Errorf("after break 0: %s", p.State)
	}
	la, err = ea.Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if la.Term != 3 {
		t.Errorf("A's term after the break = %d, want 3", la.Term)
	}
	if err := lb.Release(ctx); err != nil {
		t.Errorf("B's release of a broken lease: %v, want nil", err)
	}
	if p := mustProps(t, ca); p.State != StateLeased || p.Holder != "vm-a" || p.Term != 3 {
		t.Errorf("B's release touched A's lease: %+v", p)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.BreakLease(ctx, 0); !errors.Is(err, ErrNotLeased) {
		t.Errorf("break with no lease: %v, want ErrNotLeased", err)
	}
}

func TestAzuriteKeepsContentAndForeignMetadata(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	name := uniqueContainer(t)
	c := azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: name, Blob: "lock"})
	if _, err := sdkContainer(t, cs, name).Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	bb := sdkBlob(t, cs, name, "lock")
	owner := "team-x"
	if _, err := bb.UploadBuffer(ctx, []byte("precious"), &blockblob.UploadBufferOptions{
		Metadata: map[string]*string{"Owner": &owner},
	}); err != nil {
		t.Fatal(err)
	}
	l, err := azuriteElector(t, c, "vm-a", nil).Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	resp, err := bb.DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "precious" {
		t.Errorf("content = %q: the blob was overwritten", body)
	}
	if p := mustProps(t, c); p.Metadata["owner"] != "team-x" || p.Holder != "vm-a" || p.Term != 1 {
		t.Errorf("metadata %v", p.Metadata)
	}
}

func TestAzuriteKeeperAndBreak(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "svc"}
	ca, cb := azuriteBlob(t, cfg), azuriteBlob(t, cfg)
	l, err := azuriteElector(t, ca, "vm-a", func(c *Config) { c.RenewInterval = time.Second }).Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Keep(ctx)
	for range 2 {
		select {
		case <-l.RenewedAt():
		case <-l.Lost():
			t.Fatalf("lost: %v", l.LostErr())
		case <-time.After(5 * time.Second):
			t.Fatal("no renewal within 5 s")
		}
	}

	// An operator breaks it with a period: the holder learns at its next renewal.
	left, err := cb.BreakLease(ctx, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if left <= 0 || left > 15*time.Second {
		t.Errorf("broken in %v", left)
	}
	if p := mustProps(t, cb); p.State != StateBreaking {
		t.Errorf("state after break: %s", p.State)
	}
	if _, err := azuriteElector(t, cb, "vm-b", nil).Acquire(ctx, WaitOptions{NoWait: true}); !errors.Is(err, ErrHeld) {
		t.Errorf("acquire while breaking: %v, want ErrHeld", err)
	}
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the keeper did not notice the break")
	}
	le := l.LostErr()
	var se *StorageError
	if !errors.As(le, &se) || se.Code != "LeaseIsBrokenAndCannotBeRenewed" || time.Until(le.StopAt) > 0 {
		t.Errorf("LostErr: %v (StopAt in %v)", le, time.Until(le.StopAt))
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("release after a break: %v", err)
	}
}

func TestAzuriteErrors(t *testing.T) {
	cs := azuriteConnectionString(t)
	parsed, err := parseConnectionString(cs)
	if err != nil {
		t.Fatal(err)
	}
	container := uniqueContainer(t)

	t.Run("wrong key", func(t *testing.T) {
		t.Parallel()
		c := azuriteBlob(t, ClientConfig{Account: parsed.account, AccountKey: testKey, Endpoint: parsed.endpoint,
			Container: container, Blob: "lock"})
		start := time.Now()
		const budget = 3 * time.Second
		_, err := azuriteElector(t, c, "vm-a", nil).Acquire(t.Context(), WaitOptions{NoWait: true, StorageTimeout: budget})
		var se *StorageError
		if !errors.As(err, &se) || !errors.Is(err, ErrUnavailable) || se.StatusCode != 403 || se.Transient() {
			t.Fatalf("err = %v, want a 403 StorageError", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %v: a refusal must not be retried", d)
		}
		if strings.Contains(err.Error(), testKey) {
			t.Errorf("error contains the key: %v", err)
		}
	})

	closed := closedPort(t)
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		c := azuriteBlob(t, ClientConfig{Account: parsed.account, AccountKey: parsed.key,
			Endpoint: "http://" + closed + "/" + parsed.account, Container: container, Blob: "lock"})
		start := time.Now()
		if _, err := c.Properties(t.Context()); !errors.Is(err, ErrUnavailable) || time.Since(start) > 3*time.Second {
			t.Errorf("Properties: %v after %v, want ErrUnavailable at once", err, time.Since(start))
		}
		start = time.Now()
		const budget = 3 * time.Second
		_, err := azuriteElector(t, c, "vm-a", nil).Acquire(t.Context(), WaitOptions{NoWait: true, StorageTimeout: budget})
		d := time.Since(start)
		var se *StorageError
		if !errors.As(err, &se) || se.StatusCode != 0 || !se.Transient() {
			t.Fatalf("Acquire: %v, want an unreachable StorageError", err)
		}
		if d < budget || d > budget+5*time.Second {
			t.Errorf("Acquire gave up after %v, want about %v", d, budget)
		}
	})

	sasFor := func(t *testing.T, perms sas.BlobPermissions) string {
		cred, err := blob.NewSharedKeyCredential(parsed.account, parsed.key)
		if err != nil {
			t.Fatal(err)
		}
		qp, err := sas.BlobSignatureValues{
			Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour).UTC(),
			Permissions: perms.String(), ContainerName: container, BlobName: "sas-lock",
		}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		return qp.Encode()
	}

	t.Run("SAS", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		// The container must exist: a blob SAS cannot create it.
		admin := azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: container, Blob: "sas-lock"})
		if err := admin.ensureBlob(ctx, true); err != nil {
			t.Fatal(err)
		}

		token := sasFor(t, sas.BlobPermissions{Read: true, Add: true, Create: true, Write: true})
		c := azuriteBlob(t, ClientConfig{SASToken: token, Endpoint: parsed.endpoint, Container: container, Blob: "sas-lock"})
		if strings.Contains(c.URL(), "?") || strings.Contains(c.URL(), "sig") {
			t.Errorf("URL() = %q", c.URL())
		}
		l, err := azuriteElector(t, c, "vm-sas", nil).Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			t.Fatalf("acquire with a SAS: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}

		readOnly := azuriteBlob(t, ClientConfig{SASToken: sasFor(t, sas.BlobPermissions{Read: true}),
			Endpoint: parsed.endpoint, Container: container, Blob: "sas-lock"})
		_, err = azuriteElector(t, readOnly, "vm-ro", nil).Acquire(ctx, WaitOptions{NoWait: true})
		var se *StorageError
		if !errors.As(err, &se) || se.StatusCode != 403 || se.Hint == "" {
			t.Errorf("read-only SAS: %v, want 403 with a hint", err)
		}
		if err != nil && strings.Contains(err.Error(), "sig=") {
			t.Errorf("error leaks the SAS: %v", err)
		}

		unreachable := azuriteBlob(t, ClientConfig{SASToken: token, Endpoint: "http://" + closed + "/" + parsed.account,
			Container: container, Blob: "sas-lock"})
		_, err = unreachable.Properties(ctx)
		if !errors.Is(err, ErrUnavailable) || strings.Contains(err.Error(), "sig=") || strings.Contains(err.Error(), token) {
			t.Errorf("unreachable with a SAS: %v", err)
		}
		if _, err := unreachable.BreakLease(ctx, 0); err == nil || strings.Contains(err.Error(), "sig=") {
			t.Errorf("break, unreachable with a SAS: %v", err)
		}
	})
}

// closedPort is a loopback address that refuses connections.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A follower against the real service sends no acquire while the lease is held.
func TestAzuriteFollowerWaits(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "wait"}
	ca, cb := azuriteBlob(t, cfg), azuriteBlob(t, cfg)
	la, err := azuriteElector(t, ca, "vm-a", nil).Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan *Properties, 4)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		la.Release(ctx)
	}()
	start := time.Now()
	lb, err := azuriteElector(t, cb, "vm-b", func(c *Config) { c.PollInterval = 200 * time.Millisecond }).
		Acquire(ctx, WaitOptions{Timeout: 10 * time.Second, OnWait: func(p *Properties) { waited <- p }})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second || d > 5*time.Second {
		t.Errorf("acquired after %v, want right after the release at 1.5 s", d)
	}
	select {
	case p := <-waited:
		if p.Holder != "vm-a" {
			t.Errorf("OnWait holder %q", p.Holder)
		}
	default:
		t.Error("OnWait was not called")
	}
	if lb.Term != 2 {
		t.Errorf("term %d, want 2", lb.Term)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
