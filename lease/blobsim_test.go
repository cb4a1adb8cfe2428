package lease

// The lease package against the in-memory model of the Blob service
// (internal/testkit/blobsim), in a synctest bubble: an elector, its claim
// and its keeper through the SDK and the model's Transport, with the
// service's answers and faults, and the model's record of who held the
// lease when checked against the kill deadline the keeper gives.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
)

// blobsimContainer is the container "leases" of svc, every request sent
// through svc's Transport for client.
func blobsimContainer(t *testing.T, svc *blobsim.Service, client string) *Container {
	t.Helper()
	c, err := NewContainer(ClientConfig{ConnectionString: blobsim.ConnectionString, Container: "leases", Transport: svc.Transport(client)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// blobsimElector is an elector of lease name for identity, through client.
func blobsimElector(t *testing.T, svc *blobsim.Service, client, name string) *Elector {
	t.Helper()
	c := blobsimContainer(t, svc, client)
	b, err := c.Blob(name)
	if err != nil {
		t.Fatal(err)
	}
	if b.marker, err = c.Blob(PauseBlob(name)); err != nil {
		t.Fatal(err)
	}
	e, err := NewElector(b, Config{Duration: 15 * time.Second, KillGrace: 10 * time.Second, Identity: client, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A holder whose renewals stop reaching the service loses the lease with a
// kill deadline before the service's hold ends; the next holder gets it
// only after that.
func TestBlobsimKillDeadlineWithinTheHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		var cut atomic.Bool
		svc.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			return blobsim.Plan{Unreachable: r.Client == "a" && r.Op == blobsim.OpRenew && cut.Load()}
		}))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		l, err := blobsimElector(t, svc, "a", "job").Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		held := time.Now()
		l.Keep(ctx)
		time.Sleep(time.Minute) // renewals go on
		cut.Store(true)
		<-l.Lost()
		killBy := l.KillBy()
		if !svc.HeldThroughout("leases", "job", l.ID, held, killBy) {
			t.Fatalf("the kill deadline %v is past the service's hold: %+v", killBy.Sub(held), svc.Tenures("leases", "job"))
		}
		l2, err := blobsimElector(t, svc, "b", "job").Acquire(ctx, WaitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if now := time.Now(); now.Before(killBy) {
			t.Errorf("the next holder acquired %v before the kill deadline", killBy.Sub(now))
		}
		if err := l2.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A break reaches the keeper as the service's answer to its next renewal
// (409 LeaseIsBrokenAndCannotBeRenewed): lost at once. Without a period
// the service holds the lease until the holder's period ends, after its
// kill deadline; with a period of 0 it lets go at once, before.
func TestBlobsimBreakReachesTheKeeper(t *testing.T) {
	for _, tc := range []struct {
		name   string
		period time.Duration
		safe   bool
	}{
		{"no period", BreakAtPeriodEnd, true},
		{"a period of 0", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := blobsim.New()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				l, err := blobsimElector(t, svc, "a", "job").Acquire(ctx, WaitOptions{NoWait: true})
				if err != nil {
					t.Fatal(err)
				}
				held := time.Now()
				l.Keep(ctx)
				time.Sleep(7 * time.Second)
				operator := blobsimElector(t, svc, "operator", "job")
				if _, err := operator.b.BreakLease(ctx, tc.period); err != nil {
					t.Fatal(err)
				}
				<-l.Lost()
				var se *StorageError
				if lost := l.LostErr(); !errors.As(lost.Reason, &se) || se.Code != "LeaseIsBrokenAndCannotBeRenewed" {
					t.Fatalf("lost: %v", lost)
				}
				if got := svc.HeldThroughout("leases", "job", l.ID, held, l.KillBy()); got != tc.safe {
					t.Errorf("held until the kill deadline: %v, want %v (%+v)", got, tc.safe, svc.Tenures("leases", "job"))
				}
			})
		})
	}
}
