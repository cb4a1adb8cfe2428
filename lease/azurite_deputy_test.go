package lease

import (
	"context"
	"testing"
	"time"
)

// On the emulator: the first waiting follower creates the deputy's place
// and takes it, recorded with its identity and the service's time; a
// second follower finds it taken; the holder's release goes to the deputy,
// which gives its place up once it holds the lease; the place is then
// free, and the second follower takes it at its next poll. The place is
// not a lease of its own in the container's listing.
func TestAzuriteDeputy(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "svc"}
	poll := func(cf *Config) { cf.PollInterval = 2 * time.Second }

	holder, err := azuriteElector(t, azuriteBlob(t, cfg), "vm-1", poll).Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	holder.Keep(ctx)
	standing := make(chan string, 4)
	onDeputy := func(who string) func(bool) {
		return func(s bool) {
			if s {
				standing <- who
			}
		}
	}
	b := follow(ctx, azuriteElector(t, azuriteBlob(t, cfg), "vm-2", poll), WaitOptions{Deputy: DefaultDeputyPoll, OnDeputy: onDeputy("vm-2")})
	if who := <-standing; who != "vm-2" {
		t.Fatalf("%s took the place first", who)
	}
	before := time.Now()
	c := follow(ctx, azuriteElector(t, azuriteBlob(t, cfg), "vm-3", poll), WaitOptions{Deputy: DefaultDeputyPoll, OnDeputy: onDeputy("vm-3")})

	d, err := azuriteBlob(t, cfg).ReadDeputy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d == nil || d.Holder != "vm-2" || d.Since.IsZero() {
		t.Fatalf("the deputy read: %+v, want vm-2 since the service's time", d)
	}
	time.Sleep(time.Until(before.Add(2500 * time.Millisecond))) // vm-3 has polled and seen the place taken
	select {
	case who := <-standing:
		t.Fatalf("%s took a place already taken", who)
	default:
	}

	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-b
	if got.err != nil {
		t.Fatal(got.err)
	}
	t.Logf("the deputy took over %v after the release", got.at.Sub(released).Round(time.Millisecond))
	if who := <-standing; who != "vm-3" {
		t.Errorf("%s took the place after the deputy led, want vm-3", who)
	}
	if d, err := azuriteBlob(t, cfg).ReadDeputy(ctx); err != nil || d == nil || d.Holder != "vm-3" {
		t.Errorf("the deputy read: %+v, %v, want vm-3", d, err)
	}

	views, err := azuriteBlob(t, cfg).Container().Views(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].Name != "svc" {
		t.Errorf("the container lists %+v, want the lease svc alone", views)
	}
	if err := got.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got = <-c
	if got.err != nil {
		t.Fatal(got.err)
	}
	if err := got.l.Release(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}
	if d, err := azuriteBlob(t, cfg).ReadDeputy(ctx); err != nil || d != nil {
		t.Errorf("the deputy read: %+v, %v, want none once the last follower led", d, err)
	}
}
