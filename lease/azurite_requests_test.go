package lease

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// The single requests (requests.go) against the emulator: each says what
// the service answered, a missing blob or container and one that exists
// already included.
func TestAzuriteSingleRequests(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	c, err := NewContainer(ClientConfig{ConnectionString: cs, Container: uniqueContainer(t)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Blob("tool/scratch")
	if err != nil {
		t.Fatal(err)
	}
	wantErr := func(what string, err error, is func(*StorageError) bool) {
		t.Helper()
		if se := asStorageError(err); se == nil || !is(se) {
			t.Errorf("%s: %v", what, err)
		}
	}
	containerMissing := (*StorageError).ContainerMissing

	// No container yet.
	_, err = c.Settings(ctx)
	wantErr("settings of a missing container", err, containerMissing)
	wantErr("read in a missing container", b.Read(ctx), containerMissing)
	_, err = c.ListNames(ctx, "")
	wantErr("listing a missing container", err, containerMissing)
	wantErr("create in a missing container", b.Create(ctx), containerMissing)

	if err := c.Create(ctx); err != nil {
		t.Fatal(err)
	}
	wantErr("create the container again", c.Create(ctx), (*StorageError).AlreadyExists)
	if s, err := c.Settings(ctx); err != nil || s.WritesRefused() != "" {
		t.Errorf("settings: %+v, %v", s, err)
	}
	if ai, err := c.AccountInfo(ctx); err != nil || ai.Kind != "StorageV2" || ai.HNS {
		t.Errorf("account: %+v, %v", ai, err)
	}

	// No blob yet.
	wantErr("read a missing blob", b.Read(ctx), (*StorageError).BlobMissing)
	wantErr("delete a missing blob", b.Delete(ctx), (*StorageError).BlobMissing)

	if err := b.Create(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx); asStorageError(err) == nil || asStorageError(err).StatusCode/100 != 4 {
		t.Errorf("create over a blob: %v, want it refused", err)
	}
	if err := b.Read(ctx); err != nil {
		t.Errorf("read: %v", err)
	}
	if names, err := c.ListNames(ctx, "tool/"); err != nil || !slices.Equal(names, []string{"tool/scratch"}) {
		t.Errorf("list: %v, %v", names, err)
	}

	// The lease, by hand.
	if _, err := b.AcquireLease(ctx, "00000000-0000-0000-0000-000000000001", 5*time.Second); !errors.As(err, new(*ConfigError)) {
		t.Errorf("acquire for 5s: %v, want a ConfigError before any request", err)
	}
	const id = "00000000-0000-0000-0000-0000000000aa"
	etag, err := b.AcquireLease(ctx, id, 15*time.Second)
	if err != nil || etag == "" {
		t.Fatalf("acquire: %q, %v", etag, err)
	}
	if err := b.RenewLease(ctx, id); err != nil {
		t.Errorf("renew: %v", err)
	}
	if err := b.SetMetadata(ctx, map[string]string{"tool": "1"}, id, `"0x0"`); asStorageError(err) == nil || asStorageError(err).StatusCode != 412 {
		t.Errorf("set metadata with a stale ETag: %v, want 412", err)
	}
	if err := b.SetMetadata(ctx, map[string]string{"Tool": "1"}, "", etag); asStorageError(err) == nil || asStorageError(err).StatusCode != 412 {
		t.Errorf("set metadata of a leased blob without its lease ID: %v, want 412", err)
	}
	if err := b.SetMetadata(ctx, map[string]string{"Tool": "1"}, id, etag); err != nil {
		t.Errorf("set metadata: %v", err)
	}
	if err := b.Delete(ctx); asStorageError(err) == nil || asStorageError(err).StatusCode != 412 {
		t.Errorf("delete a leased blob: %v, want 412", err)
	}
	p, err := b.Properties(ctx)
	if err != nil || p.State != StateLeased || p.Metadata["tool"] != "1" {
		t.Errorf("properties: %+v, %v", p, err)
	}
	if err := b.ReleaseLease(ctx, id); err != nil {
		t.Errorf("release: %v", err)
	}
	wantErr("renew a released lease", b.RenewLease(ctx, id), func(se *StorageError) bool { return se.StatusCode == 409 })
	if err := b.Delete(ctx); err != nil {
		t.Errorf("delete: %v", err)
	}
	wantErr("read a deleted blob", b.Read(ctx), (*StorageError).BlobMissing)

	// A done ctx is its own error, not the storage's.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Read(done); !errors.Is(err, context.Canceled) {
		t.Errorf("read with a done ctx: %v", err)
	}
}
