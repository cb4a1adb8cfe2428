package blobsim_test

// The model's timing, in a synctest bubble: expiry and breaks at their
// exact instant, the Date header to the second, and who held a lease when.

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
)

// A 15 s lease is held until 15 s after the acquire was applied, and free
// at that instant, without any request in between.
func TestExpiryAtTheInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := blobsim.New()
		setup(t, s)
		a, b := newClient(t, s, "a", 0), newClient(t, s, "b", 0)
		ctx := t.Context()
		t0 := time.Now()
		if err := a.acquire(ctx, "x", idA, 15); err != nil {
			t.Fatal(err)
		}
		time.Sleep(15*time.Second - time.Nanosecond)
		if st, c := code(t, b.acquire(ctx, "x", idB, 15)); st != 409 || c != "LeaseAlreadyPresent" {
			t.Fatalf("acquire by another 1 ns before the expiry: %d %s, want 409 LeaseAlreadyPresent", st, c)
		}
		if info, _ := s.Blob(ctr, "x"); info.State != blobsim.Leased || !info.Expiry.Equal(t0.Add(15*time.Second)) {
			t.Fatalf("blob before the expiry: %s until %v, want leased until %v", info.State, info.Expiry, t0.Add(15*time.Second))
		}
		time.Sleep(time.Nanosecond)
		if got := a.state("x"); got != "expired" {
			t.Fatalf("at the expiry: %s, want expired", got)
		}
		if err := b.acquire(ctx, "x", idB, 15); err != nil {
			t.Fatalf("acquire by another at the expiry: %v", err)
		}
	})
}

// A break frees the lease at the end of its period, or of the holder's,
// whichever comes first; x-ms-lease-time says when.
func TestBreakTiming(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seconds int32 // the lease's duration, -1 infinite
		waited  time.Duration
		period  int32 // -1: none
		free    time.Duration
	}{
		{"a period shorter than what is left", 60, 0, 10, 10 * time.Second},
		{"a period longer than what is left", 15, 5 * time.Second, 30, 10 * time.Second},
		{"no period: the holder's period", 15, 5 * time.Second, -1, 10 * time.Second},
		{"infinite, with a period", -1, time.Hour, 7, 7 * time.Second},
		{"a period of 0", 60, 0, 0, 0},
		{"infinite, no period", -1, 0, -1, 0},
		{"what is left rounded", 15, 4500 * time.Millisecond, -1, 10500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := blobsim.New()
				setup(t, s)
				a, b := newClient(t, s, "a", 0), newClient(t, s, "b", 0)
				ctx := t.Context()
				if err := a.acquire(ctx, "x", idA, tc.seconds); err != nil {
					t.Fatal(err)
				}
				time.Sleep(tc.waited)
				left, err := b.breakLease(ctx, "x", tc.period)
				if err != nil {
					t.Fatal(err)
				}
				if want := int32((tc.free + time.Second/2) / time.Second); left != want {
					t.Errorf("x-ms-lease-time %d, want %d", left, want)
				}
				if tc.free > 0 {
					time.Sleep(tc.free - time.Nanosecond)
					if got := a.state("x"); got != "breaking" {
						t.Fatalf("1 ns before the break ends: %s, want breaking", got)
					}
					if st, c := code(t, b.acquire(ctx, "x", idB, 15)); st != 409 || c != "LeaseAlreadyPresent" {
						t.Fatalf("acquire while breaking: %d %s", st, c)
					}
					time.Sleep(time.Nanosecond)
				}
				if got := a.state("x"); got != "broken" {
					t.Fatalf("when the break ends: %s, want broken", got)
				}
				if err := b.acquire(ctx, "x", idB, 15); err != nil {
					t.Fatalf("acquire when broken: %v", err)
				}
			})
		})
	}
}

// The Date header, Last-Modified and x-ms-creation-time are to the
// second, as the service sends them; the ETag changes with the metadata.
func TestDateToTheSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := blobsim.New()
		var rec headerRecorder
		c := newClient(t, s, "a", 0, &rec)
		ctx := t.Context()
		time.Sleep(1700 * time.Millisecond) // the bubble starts on a whole second
		start := time.Now()
		if _, err := c.cc.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		c.create("x")
		p, err := c.blob("x").GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := start.Truncate(time.Second).UTC()
		for name, got := range map[string]time.Time{"Date": *p.Date, "Last-Modified": *p.LastModified, "x-ms-creation-time": *p.CreationTime} {
			if !got.Equal(want) {
				t.Errorf("%s %v, want %v", name, got, want)
			}
		}
		if h := rec.answers[len(rec.answers)-1]; h.Get("Date") != want.Format(http.TimeFormat) {
			t.Errorf("Date header %q, want %q", h.Get("Date"), want.Format(http.TimeFormat))
		}
		time.Sleep(time.Second)
		v := "1"
		r, err := c.blob("x").SetMetadata(ctx, map[string]*string{"term": &v}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *r.ETag == *p.ETag || !r.Date.Equal(want.Add(time.Second)) {
			t.Errorf("set metadata a second later: ETag %s (was %s), Date %v", *r.ETag, *p.ETag, *r.Date)
		}
		info, _ := s.Blob(ctr, "x")
		if info.Metadata["term"] != "1" || info.ETag != string(*r.ETag) || !info.Created.Equal(start) {
			t.Errorf("Blob: %+v", info)
		}
	})
}

// The holds of a lease: a renewal extends one, a renewal after expiry
// begins another (the time between was not held), a change of ID hands it
// over, a break shortens it, a release or deletion ends it.
func TestHeldThroughout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := blobsim.New()
		setup(t, s)
		a := newClient(t, s, "a", 0)
		ctx := t.Context()
		t0 := time.Now()
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		sleepUntil := func(d time.Duration) { time.Sleep(time.Until(at(d))) }
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(a.acquire(ctx, "x", idA, 15))
		sleepUntil(10 * time.Second)
		_, err := a.lease("x", idA).RenewLease(ctx, nil) // held until 25 s
		must(err)
		sleepUntil(30 * time.Second)
		_, err = a.lease("x", idA).RenewLease(ctx, nil) // expired at 25 s, nobody touched it: held again from 30 s
		must(err)
		sleepUntil(35 * time.Second)
		_, err = a.lease("x", idA).ChangeLease(ctx, idB, nil) // B from 35 s, until 45 s
		must(err)
		sleepUntil(38 * time.Second)
		_, err = a.breakLease(ctx, "x", 5) // B until 43 s
		must(err)
		sleepUntil(50 * time.Second)
		must(a.acquire(ctx, "x", idC, -1)) // C from 50 s, no end
		sleepUntil(60 * time.Second)
		leaseC := idC
		_, err = a.blob("x").Delete(ctx, &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{
			LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: &leaseC}}})
		must(err) // C until 60 s

		for _, tc := range []struct {
			id       string
			from, to time.Duration
			held     bool
		}{
			{idA, 0, 0, true},
			{idA, 0, 25*time.Second - 1, true},
			{idA, 0, 25 * time.Second, false}, // at the expiry another may acquire
			{idA, 20 * time.Second, 31 * time.Second, false},
			{idA, 26 * time.Second, 29 * time.Second, false}, // expired, not yet renewed
			{idA, 30 * time.Second, 35*time.Second - 1, true},
			{idA, 30 * time.Second, 35 * time.Second, false}, // changed to B
			{idB, 35 * time.Second, 43*time.Second - 1, true},
			{idB, 35 * time.Second, 43 * time.Second, false}, // broken
			{idB, 30 * time.Second, 40 * time.Second, false},
			{idC, 50 * time.Second, 60*time.Second - 1, true},
			{idC, 50 * time.Second, 60 * time.Second, false}, // deleted
			{idA, 5 * time.Second, 1 * time.Second, false},   // from after to
		} {
			if got := s.HeldThroughout(ctr, "x", tc.id, at(tc.from), at(tc.to)); got != tc.held {
				t.Errorf("%s held throughout [%v, %v]: %v, want %v", tc.id[:8], tc.from, tc.to, got, tc.held)
			}
		}
		if s.HeldThroughout(ctr, "y", idA, t0, t0) || s.HeldThroughout("d", "x", idA, t0, t0) {
			t.Error("held on a blob never leased")
		}
		if got := s.HeldThroughout(ctr, "x", "AAAAAAAA-0000-4000-8000-000000000001", t0, t0); !got {
			t.Error("a lease ID in upper case: not held")
		}
		want := []blobsim.Tenure{
			{LeaseID: idA, From: at(0), Until: at(25 * time.Second)},
			{LeaseID: idA, From: at(30 * time.Second), Until: at(35 * time.Second)},
			{LeaseID: idB, From: at(35 * time.Second), Until: at(43 * time.Second)},
			{LeaseID: idC, From: at(50 * time.Second), Until: at(60 * time.Second)},
		}
		got := s.Tenures(ctr, "x")
		if len(got) != len(want) {
			t.Fatalf("tenures %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i].LeaseID != want[i].LeaseID || !got[i].From.Equal(want[i].From) || !got[i].Until.Equal(want[i].Until) {
				t.Errorf("tenure %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}

// Random lease requests by three holders, at random times: whenever the
// service says a lease is held, its holder's tenure covers that instant
// and no other ID's does; no two tenures of a blob overlap.
func TestTenuresAgreeWithTheService(t *testing.T) {
	for seed := range uint64(20) {
		synctest.Test(t, func(t *testing.T) {
			s := blobsim.New()
			setup(t, s)
			ids := []string{idA, idB, idC}
			checks := 0
			s.OnApply(func(ap blobsim.Applied) {
				if ap.Blob != "x" {
					return
				}
				for _, id := range ids {
					held := s.HeldThroughout(ctr, "x", id, ap.Time, ap.Time)
					if want := ap.HeldBy == id; held != want {
						t.Errorf("seed %d, %v after %s by %s (%d %s): %s held %v, want %v",
							seed, ap.Time.Sub(time.Time{}), ap.Op, ap.LeaseID+ap.ProposedID, ap.Status, ap.Code, id[:8], held, want)
					}
				}
				checks++
			})
			rng := rand.New(rand.NewPCG(seed, 1))
			c := newClient(t, s, "a", 0)
			ctx := t.Context()
			for range 300 {
				id := ids[rng.IntN(len(ids))]
				switch rng.IntN(7) {
				case 0, 1:
					secs := []int32{15, 30, -1}[rng.IntN(3)]
					_ = c.acquire(ctx, "x", id, secs)
				case 2:
					_, _ = c.lease("x", id).RenewLease(ctx, nil)
				case 3:
					_, _ = c.lease("x", id).ReleaseLease(ctx, nil)
				case 4:
					_, _ = c.breakLease(ctx, "x", []int32{-1, 0, 5, 20}[rng.IntN(4)])
				case 5:
					_, _ = c.lease("x", id).ChangeLease(ctx, ids[rng.IntN(len(ids))], nil)
				case 6:
					v := "w"
					_, _ = c.blob("x").SetMetadata(ctx, map[string]*string{"k": &v}, &blob.SetMetadataOptions{
						AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: &id}}})
				}
				_ = c.state("x") // a read at this instant, checked too
				time.Sleep(time.Duration(rng.IntN(20_000)) * time.Millisecond)
			}
			ts := s.Tenures(ctr, "x")
			for i := 1; i < len(ts); i++ {
				if prev := ts[i-1]; prev.Until.IsZero() || prev.Until.After(ts[i].From) {
					t.Errorf("seed %d: tenures overlap: %+v then %+v", seed, prev, ts[i])
				}
			}
			if checks < 600 || len(ts) < 10 {
				t.Errorf("seed %d: %d checks, %d tenures: the test did not exercise the lease", seed, checks, len(ts))
			}
		})
	}
}

// OnApply sees every request the service applied or refused, in order,
// on the requesting goroutine, and may read the Service.
func TestOnApplyOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := blobsim.New()
		setup(t, s)
		var seen []blobsim.Applied
		s.OnApply(func(ap blobsim.Applied) {
			if len(seen) > 0 && ap.Time.Before(seen[len(seen)-1].Time) {
				t.Errorf("applied at %v after %v", ap.Time, seen[len(seen)-1].Time)
			}
			_, _ = s.Blob(ap.Container, ap.Blob) // reads do not deadlock
			seen = append(seen, ap)
		})
		ctx := t.Context()
		done := make(chan error, 3)
		for i, id := range []string{idA, idB, idC} {
			go func() {
				c := newClient(t, s, "c"+id[:1], 0)
				time.Sleep(time.Duration(i) * time.Second)
				done <- c.acquire(ctx, "x", id, 15)
			}()
		}
		var ok int
		for range 3 {
			if <-done == nil {
				ok++
			}
		}
		if ok != 1 || len(seen) != 3 {
			t.Fatalf("%d acquires succeeded, %d seen; want 1 and 3", ok, len(seen))
		}
		first := seen[0]
		if first.Client != "ca" || first.Op != blobsim.OpAcquire || first.Status != 201 || first.ProposedID != idA ||
			first.HeldBy != idA || first.State != blobsim.Leased || !first.Until.Equal(first.Time.Add(15*time.Second)) {
			t.Errorf("first: %+v", first)
		}
		for _, ap := range seen[1:] {
			if ap.Status != 409 || ap.Code != "LeaseAlreadyPresent" || ap.HeldBy != idA || ap.Seq != 0 {
				t.Errorf("later: %+v", ap)
			}
		}
	})
}
