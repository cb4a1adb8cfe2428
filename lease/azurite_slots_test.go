package lease

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
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

// The slot poll's listing (ListOwn) through the service's hard answers:
// lease pool has a sibling, pool-a, so each poll lists two pages, the
// second sent on from pool~ (startFrom). Its pages lost (the connection
// dropped), then refused 503 ServerBusy, a waiting contender keeps waiting
// without a claim or a wrong slot, and takes the slot freed once the
// service answers again, with the term grown.
func TestAzuriteSlotPollThroughFaults(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := uniqueContainer(t)
	two := func(c *Config) { c.Slots = 2 }
	cfg := ClientConfig{ConnectionString: cs, Container: name, Blob: "pool"}
	var held []*Lease
	for _, id := range []string{"vm-1", "vm-2"} {
		l, err := azuriteElector(t, azuriteBlob(t, cfg), id, two).Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		held = append(held, l)
	}
	defer func() {
		for _, l := range held {
			_ = l.Release(context.Background())
		}
	}()
	if _, err := sdkBlob(t, cs, name, "pool-a").UploadBuffer(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}

	proxy, pcs := faultproxy.Start(t, cs)
	e := azuriteElector(t, azuriteBlob(t, ClientConfig{ConnectionString: pcs, Container: name, Blob: "pool"}), "vm-3",
		func(c *Config) { c.Slots = 2; c.PollInterval = 100 * time.Millisecond })
	type result struct {
		l   *Lease
		err error
	}
	done := make(chan result, 1)
	// The second page of every poll is lost, then refused.
	proxy.Set(faultproxy.Mode{LoseAnswer: faultproxy.LoseAnswer{Op: faultproxy.OpList, Query: "startFrom=", Count: 3}})
	go func() {
		l, err := e.Acquire(ctx, WaitOptions{Timeout: 45 * time.Second})
		done <- result{l, err}
	}()
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			select {
			case r := <-done:
				t.Fatalf("acquire ended %v, %v while %s", r.l, r.err, what)
			case <-ctx.Done():
				t.Fatalf("%s: %v", what, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitUntil("the lost pages", func() bool { return lists(proxy) >= 8 })
	proxy.Set(faultproxy.Mode{LoseAnswer: faultproxy.LoseAnswer{Op: faultproxy.OpList, Query: "startFrom=", Status: http.StatusServiceUnavailable, Code: "ServerBusy"}})
	from := lists(proxy)
	waitUntil("the refused pages", func() bool { return lists(proxy) >= from+4 })
	freed := held[1]
	if err := freed.Release(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.Set(faultproxy.Mode{})
	r := <-done
	if r.err != nil {
		t.Fatalf("the waiting contender: %v, want the freed slot once the service answers", r.err)
	}
	held = append(held, r.l)
	if r.l.Slot != freed.Slot || r.l.Term != 2 {
		t.Errorf("took slot %d term %d, want slot %d term 2", r.l.Slot, r.l.Term, freed.Slot)
	}
	if c := proxy.Counts(); c.ByOp[faultproxy.OpSetMetadata] != 1 || c.ByOp[faultproxy.OpAcquire] != 1 {
		t.Errorf("requests %+v: want one acquire and one claim, once the slot was free", c.ByOp)
	}
}
