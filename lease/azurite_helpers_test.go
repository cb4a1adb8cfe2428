package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A lease of two slots after 500 --once-per-host runs, each ended by a done
// marker and a release: the markers live under the helper prefix, so the
// slot poll's listing of the lease holds its two slots alone, a done host
// is still skipped, a new host still runs, and the container's listing of
// leases holds no marker, lease names after the helpers included.
func TestAzuriteDoneMarkersStayApart(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const hosts = 500
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "patch"}
	c := azuriteBlob(t, cfg)
	slots := func(cf *Config) { cf.Slots = 2 }
	for i := range hosts {
		host := fmt.Sprintf("vm-%03d", i)
		l, err := azuriteElector(t, c, host, slots).Acquire(ctx, WaitOptions{NoWait: true, OncePerHost: host})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if err := l.MarkDone(ctx, host); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	listed, _, err := c.c.List(ctx, "patch")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 {
		t.Errorf("the slot poll's listing holds %d blobs, want the 2 slots", len(listed))
	}
	done, _, err := c.c.List(ctx, DonePrefix("patch"))
	if err != nil || len(done) != hosts {
		t.Errorf("done markers: %d, %v; want %d", len(done), err, hosts)
	}
	if _, err := azuriteElector(t, c, "vm-007", slots).Acquire(ctx, WaitOptions{NoWait: true, OncePerHost: "vm-007"}); !errors.Is(err, ErrSkipped) {
		t.Errorf("a done host: %v, want skipped", err)
	}
	l, err := azuriteElector(t, c, "vm-new", slots).Acquire(ctx, WaitOptions{NoWait: true, OncePerHost: "vm-new"})
	if err != nil {
		t.Fatalf("a new host: %v, want it to run", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Leases whose names sort before and after the helper blobs.
	for _, name := range []string{"alpha", "zulu", "\u00e9t\u00e9"} {
		other := cfg
		other.Blob = name
		if _, err := azuriteElector(t, azuriteBlob(t, other), "vm-x", nil).Acquire(ctx, WaitOptions{NoWait: true}); err != nil {
			t.Fatal(err)
		}
	}
	all, _, err := c.c.ListLeases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range all {
		if strings.HasPrefix(b.Name, HelperPrefix) {
			t.Errorf("the listing of leases holds the helper blob %q", b.Name)
		}
		names = append(names, b.Name)
	}
	if got, want := strings.Join(names, ","), "alpha,patch,patch~slot-1,zulu,\u00e9t\u00e9"; got != want {
		t.Errorf("leases listed: %s, want %s", got, want)
	}
}

// Two processes of one host that take the two slots of a lease in the same
// instant under --once-per-host: one goes on, the other gives its slot
// back, and the history of neither slot shows a run that never happened.
func TestAzuriteSameHostRaceLeavesNoPhantomRun(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "race"}
	slots := func(cf *Config) { cf.Slots = 2 }
	ran := 0
	for round := range 8 {
		host := fmt.Sprintf("vm-%d", round)
		results := make(chan *Lease, 2)
		for range 2 {
			go func() {
				l, err := azuriteElector(t, azuriteBlob(t, cfg), host, slots).Acquire(ctx,
					WaitOptions{NoWait: true, OncePerHost: host})
				if err != nil && !errors.Is(err, ErrHeld) && !errors.Is(err, ErrSkipped) {
					t.Errorf("round %d: %v", round, err)
				}
				results <- l
			}()
		}
		for range 2 {
			if l := <-results; l != nil {
				ran++
				if err := l.RecordRunEnd(ctx, 1); err != nil { // a failed run: the host stays not done
					t.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	c := azuriteBlob(t, cfg)
	listed, _, err := c.c.List(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, b := range listed {
		for _, r := range ReadHistory(b.Props.Metadata, false) {
			runs++
			if r.EndUnknown() {
				t.Errorf("slot %s: a run that never happened: %+v", b.Name, r)
			}
		}
	}
	if runs != ran {
		t.Errorf("%d runs in the slots' histories, %d ran", runs, ran)
	}
}
