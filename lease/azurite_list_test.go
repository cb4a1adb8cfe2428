package lease

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestListAndSiblings: a lease's slots and markers, addressed through
// Container.Blob, come back from one listing of the lease's name with their lease
// state and metadata, grouped by ParseBlobName; a missing container lists
// as empty; lease names may not contain the marker separator.
func TestListAndSiblings(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "jobs/a"}
	c := azuriteBlob(t, cfg)

	if got, _, err := c.c.List(ctx, ""); err != nil || len(got) != 0 {
		t.Fatalf("listing a missing container = %v, %v; want empty, nil", got, err)
	}

	names := []string{SlotBlob("jobs/a", 0), SlotBlob("jobs/a", 2), PauseBlob("jobs/a"), DoneBlob("jobs/a", "vm-1"), "jobs/ab"}
	for i, n := range names {
		s, err := c.c.Blob(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ensureBlob(ctx, i == 0); err != nil {
			t.Fatalf("creating %s: %v", n, err)
		}
	}
	slot2, _ := c.c.Blob(SlotBlob("jobs/a", 2))
	id := "0f9c2e4a-8d5b-4f0e-9a61-3c7d2b1e5f48"
	if _, err := slot2.api.acquireLease(ctx, id, 15); err != nil {
		t.Fatal(err)
	}
	if _, err := slot2.api.setMetadata(ctx, id, "", map[string]string{"holder": "vm-2", "term": "4"}); err != nil {
		t.Fatal(err)
	}

	got, date, err := c.c.List(ctx, "jobs/a")
	if err != nil {
		t.Fatal(err)
	}
	if date.IsZero() {
		t.Error("the listing's Date is zero")
	}
	// The done marker lives apart, under the helper prefix.
	want := map[string]BlobKind{"jobs/a": KindSlot, "jobs/a~slot-2": KindSlot, "jobs/a~pause": KindPause, "jobs/ab": KindSlot}
	if len(got) != len(want) {
		t.Fatalf("listed %d blobs, want %d: %+v", len(got), len(want), got)
	}
	for _, l := range got {
		kind, ok := want[l.Name]
		if !ok || ParseBlobName(l.Name).Kind != kind {
			t.Errorf("listed %q (kind %v), not expected", l.Name, ParseBlobName(l.Name).Kind)
		}
		if l.Name == "jobs/a~slot-2" {
			if l.Props.State != StateLeased || l.Props.Holder != "vm-2" || l.Props.Term != 4 || l.Props.etag == "" {
				t.Errorf("slot 2 = %+v; want leased by vm-2, term 4, with an ETag", l.Props)
			}
		} else if l.Props.State != StateAvailable {
			t.Errorf("%s: state %s, want available", l.Name, l.Props.State)
		}
	}

	if done, _, err := c.c.List(ctx, DonePrefix("jobs/a")); err != nil || len(done) != 1 ||
		ParseBlobName(done[0].Name) != (BlobName{Lease: "jobs/a", Kind: KindDone, Host: "vm-1"}) {
		t.Errorf("the done markers of jobs/a: %+v, %v; want vm-1's", done, err)
	}

	_, err = NewLeaseBlob(ClientConfig{ConnectionString: cs, Container: cfg.Container, Blob: "a~b"})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Errorf("a lease name with %q: %v, want a *ConfigError", MarkerSep, err)
	}
}
