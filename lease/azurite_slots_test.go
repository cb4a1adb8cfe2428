package lease

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// Against the emulator: a lease of three slots takes three holders, each on
// its own slot with its own term and the count recorded; a fourth is held
// off without writing; another count is refused naming both; the listing's
// ETag is the one the claim can reuse.
func TestAzuriteSlots(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "pool"}
	three := func(c *Config) { c.Slots = 3 }

	var leases []*Lease
	for _, id := range []string{"vm-1", "vm-2", "vm-3"} {
		l, err := azuriteElector(t, azuriteBlob(t, cfg), id, three).Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if l.Name != "pool" || l.Term != 1 {
			t.Errorf("%s: name %q term %d, want pool and 1", id, l.Name, l.Term)
		}
		leases = append(leases, l)
	}
	var slots []int
	for _, l := range leases {
		slots = append(slots, l.Slot)
	}
	if slices.Sort(slots); !slices.Equal(slots, []int{0, 1, 2}) {
		t.Fatalf("slots %v, want 0 1 2", slots)
	}

	c := azuriteBlob(t, cfg)
	if _, err := azuriteElector(t, c, "vm-4", three).Acquire(ctx, WaitOptions{NoWait: true}); !errors.Is(err, ErrHeld) {
		t.Fatalf("a fourth holder: %v, want held", err)
	}
	var ce *ConfigError
	const want2 = `lease: invalid slots: lease "pool" is used with --slots 3, this contender has --slots 2: use the same count on every host, or another lease name`
	if _, err := azuriteElector(t, c, "vm-5", func(c *Config) { c.Slots = 2 }).Acquire(ctx, WaitOptions{NoWait: true}); !errors.As(err, &ce) ||
		ce.Field != "slots" || err.Error() != want2 {
		t.Fatalf("another count: %v, want a slots ConfigError naming 2 and 3", err)
	}
	if _, err := azuriteElector(t, c, "vm-6", nil).Acquire(ctx, WaitOptions{NoWait: true}); !errors.As(err, &ce) ||
		!strings.Contains(err.Error(), "used with --slots 3, this contender has --slots 1:") {
		t.Fatalf("one slot: %v, want a slots ConfigError naming 1 and 3", err)
	}

	listed, _, err := c.c.List(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range listed {
		if b.Props.State != StateLeased || b.Props.Metadata[mdSlots] != "3" {
			t.Errorf("%s: state %s, slots %q; want leased and 3", b.Name, b.Props.State, b.Props.Metadata[mdSlots])
		}
		s, _ := c.c.Blob(b.Name)
		p, err := s.getProperties(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b.Props.etag == "" || b.Props.etag != p.etag {
			t.Errorf("%s: the listing's ETag %q is not the read's %q: the claim could not reuse it", b.Name, b.Props.etag, p.etag)
		}
	}

	// A released slot is taken again, by a waiting contender, with its term grown.
	freed := leases[1]
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = freed.Release(context.Background())
	}()
	l, err := azuriteElector(t, c, "vm-7", func(c *Config) { c.Slots = 3; c.PollInterval = 100 * time.Millisecond }).
		Acquire(ctx, WaitOptions{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if l.Slot != freed.Slot || l.Term != 2 {
		t.Errorf("took slot %d term %d, want slot %d term 2", l.Slot, l.Term, freed.Slot)
	}
	for _, x := range append(leases, l) {
		_ = x.Release(ctx)
	}
}
