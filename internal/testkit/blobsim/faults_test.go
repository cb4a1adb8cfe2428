package blobsim_test

// Faults through the SDK, in a synctest bubble (where a goroutine left
// behind fails the test): each Plan's effect on what the client gets, on
// whether the service applied the request, and on when.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
)

func TestFaults(t *testing.T) {
	const s1, s2, s3 = time.Second, 2 * time.Second, 3 * time.Second
	var (
		ok       = func(err error) bool { return err == nil }
		timedOut = func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
		refused  = func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
		reset    = func(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
		answered = func(status int, c bloberror.Code) func(error) bool {
			return func(err error) bool {
				var st int
				if err != nil && bloberror.HasCode(err, c) {
					st, _ = code(t, err)
				}
				return st == status
			}
		}
	)
	for _, tc := range []struct {
		name       string
		plan       blobsim.Plan
		ctxTimeout time.Duration // 0: none
		tryTimeout time.Duration // the SDK's per-try timeout; 0: none
		applied    bool
		appliedAt  time.Duration
		took       time.Duration
		err        func(error) bool
	}{
		{"none", blobsim.Plan{}, 0, 0, true, 0, 0, ok},
		{"delay", blobsim.Plan{Delay: s3}, 0, 0, true, s3, s3, ok},
		{"delay cut by the context", blobsim.Plan{Delay: s3}, s1, 0, false, 0, s1, timedOut},
		{"delay cut by the try timeout", blobsim.Plan{Delay: s3}, 0, s2, false, 0, s2, timedOut},
		{"unreachable", blobsim.Plan{Unreachable: true}, 0, 0, false, 0, 0, refused},
		{"unreachable after a delay", blobsim.Plan{Delay: s2, Unreachable: true}, 0, 0, false, 0, s2, refused},
		{"refused 503", blobsim.Plan{Refuse: 503}, 0, 0, false, 0, 0, answered(503, bloberror.ServerBusy)},
		{"refused 429", blobsim.Plan{Refuse: 429}, 0, 0, false, 0, 0, answered(429, bloberror.ServerBusy)},
		{"refused 500", blobsim.Plan{Refuse: 500}, 0, 0, false, 0, 0, answered(500, bloberror.InternalError)},
		{"refused 500 OperationTimedOut", blobsim.Plan{Refuse: 500, RefuseCode: "OperationTimedOut"}, 0, 0, false, 0, 0,
			answered(500, bloberror.OperationTimedOut)},
		{"refused after a delay", blobsim.Plan{Delay: s1, Refuse: 503, AnswerDelay: s1}, 0, 0, false, 0, s2, answered(503, bloberror.ServerBusy)},
		{"lost: the try times out", blobsim.Plan{Lose: true}, 0, s2, true, 0, s2, timedOut},
		{"lost: the context ends", blobsim.Plan{Lose: true}, s3, 0, true, 0, s3, timedOut},
		{"lost: reset", blobsim.Plan{Lose: true, LoseAs: -1}, 0, 0, true, 0, 0, reset},
		{"lost as 500", blobsim.Plan{Lose: true, LoseAs: 500}, 0, 0, true, 0, 0, answered(500, bloberror.InternalError)},
		{"lost as 503", blobsim.Plan{Lose: true, LoseAs: 503}, 0, 0, true, 0, 0, answered(503, bloberror.ServerBusy)},
		{"lost as 500 OperationTimedOut", blobsim.Plan{Lose: true, LoseAs: 500, RefuseCode: "OperationTimedOut"}, 0, 0, true, 0, 0,
			answered(500, bloberror.OperationTimedOut)},
		{"lost after a delay", blobsim.Plan{Delay: s1, Lose: true, LoseAs: -1, AnswerDelay: s1}, 0, 0, true, s1, s2, reset},
		{"answer delayed", blobsim.Plan{AnswerDelay: s2}, 0, 0, true, 0, s2, ok},
		{"answer delayed past the context", blobsim.Plan{AnswerDelay: s2}, s1, 0, true, 0, s1, timedOut},
		{"delay and answer delay", blobsim.Plan{Delay: s1, AnswerDelay: s2}, 0, 0, true, s1, s3, ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := blobsim.New()
				setup(t, s)
				s.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
					if r.Client == "a" && r.Op == blobsim.OpAcquire {
						return tc.plan
					}
					return blobsim.Plan{}
				}))
				var applied []time.Time
				s.OnApply(func(ap blobsim.Applied) {
					if ap.Op == blobsim.OpAcquire {
						applied = append(applied, ap.Time)
					}
				})
				c := newClient(t, s, "a", tc.tryTimeout)
				ctx := t.Context()
				if tc.ctxTimeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxTimeout)
					defer cancel()
				}
				start := time.Now()
				err := c.acquire(ctx, "x", idA, 15)
				if took := time.Since(start); took != tc.took {
					t.Errorf("took %v, want %v", took, tc.took)
				}
				if !tc.err(err) {
					t.Errorf("error %v", err)
				}
				info, _ := s.Blob(ctr, "x")
				if got := info.State == blobsim.Leased && info.LeaseID == idA; got != tc.applied {
					t.Errorf("applied %v (lease %s %s), want %v", got, info.State, info.LeaseID, tc.applied)
				}
				switch {
				case !tc.applied && len(applied) > 0:
					t.Errorf("OnApply told of a request not applied")
				case tc.applied && (len(applied) != 1 || !applied[0].Equal(start.Add(tc.appliedAt))):
					t.Errorf("applied at %v, want once at %v", applied, start.Add(tc.appliedAt))
				}
			})
		})
	}
}

// A lost answer with no deadline waits until the context is cancelled,
// however long.
func TestLostAnswerWaitsForTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := blobsim.New()
		setup(t, s)
		s.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			return blobsim.Plan{Lose: r.Op == blobsim.OpRelease}
		}))
		c := newClient(t, s, "a", 0)
		if err := c.acquire(t.Context(), "x", idA, 15); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Hour, cancel)
		start := time.Now()
		_, err := c.lease("x", idA).ReleaseLease(ctx, nil)
		if !errors.Is(err, context.Canceled) || time.Since(start) != time.Hour {
			t.Errorf("after %v: %v, want canceled after an hour", time.Since(start), err)
		}
		if got := c.state("x"); got != "available" {
			t.Errorf("the release was not applied: %s", got)
		}
		// A context that has already ended: nothing sent, nothing drawn.
		_, err = c.lease("x", idA).ReleaseLease(ctx, nil)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("with an ended context: %v", err)
		}
	})
}

// Seq counts a client's requests of one Op on one blob, whatever other
// clients do; Plan sees the operation and its container and blob.
func TestRequestSeq(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := blobsim.New()
		setup(t, s)
		var seen []blobsim.Request
		s.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan {
			seen = append(seen, r)
			return blobsim.Plan{}
		}))
		var seqs []int
		s.OnApply(func(ap blobsim.Applied) { seqs = append(seqs, ap.Seq) })
		a, b := newClient(t, s, "a", 0), newClient(t, s, "b", 0)
		ctx := t.Context()
		_ = a.acquire(ctx, "x", idA, 15)
		_ = b.acquire(ctx, "x", idB, 15)
		_ = a.acquire(ctx, "x", idA, 15)
		_, _ = a.lease("x", idA).RenewLease(ctx, nil)
		_ = a.acquire(ctx, "x", idA, 15)
		_, _ = a.blob("y").GetProperties(ctx, nil)
		pager := a.cc.NewListBlobsFlatPager(nil)
		if _, err := pager.NextPage(ctx); err != nil {
			t.Fatal(err)
		}
		want := []blobsim.Request{
			{Client: "a", Op: "acquire", Container: ctr, Blob: "x", Seq: 0},
			{Client: "b", Op: "acquire", Container: ctr, Blob: "x", Seq: 0},
			{Client: "a", Op: "acquire", Container: ctr, Blob: "x", Seq: 1},
			{Client: "a", Op: "renew", Container: ctr, Blob: "x", Seq: 0},
			{Client: "a", Op: "acquire", Container: ctr, Blob: "x", Seq: 2},
			{Client: "a", Op: "getProperties", Container: ctr, Blob: "y", Seq: 0},
			{Client: "a", Op: "list", Container: ctr, Seq: 0},
		}
		if !slices.Equal(seen, want) {
			t.Errorf("requests\n\t%+v\nwant\n\t%+v", seen, want)
		}
		if !slices.Equal(seqs, []int{0, 0, 1, 0, 2, 0, 0}) {
			t.Errorf("OnApply's Seq: %v", seqs)
		}
	})
}

// Over HTTP, a refusal is an answer, a reset or a lost answer closes the
// connection without one.
func TestHandlerFaults(t *testing.T) {
	s := blobsim.New()
	srv := httptest.NewServer(s.Handler("h"))
	defer srv.Close()
	plans := map[string]blobsim.Plan{
		"refused":     {Refuse: 503},
		"reset":       {Lose: true, LoseAs: -1},
		"unreachable": {Unreachable: true},
	}
	var (
		mu      sync.Mutex // the handler's goroutines write, the test reads
		applied []string
	)
	s.OnApply(func(ap blobsim.Applied) {
		mu.Lock()
		defer mu.Unlock()
		applied = append(applied, ap.Container)
	})
	s.SetFaults(blobsim.FaultsFunc(func(r blobsim.Request) blobsim.Plan { return plans[r.Container[4:]] }))
	for _, name := range []string{"refused", "reset", "unreachable"} {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/devstoreaccount1/ctr-"+name+"?restype=container", nil)
		req.Header.Set("Authorization", "SharedKey devstoreaccount1:c2lnbmF0dXJl")
		resp, err := http.DefaultClient.Do(req)
		switch name {
		case "refused":
			if err != nil || resp.StatusCode != 503 || resp.Header.Get("x-ms-error-code") != "ServerBusy" {
				t.Errorf("%s: %v %v", name, resp, err)
			}
		default:
			if err == nil {
				t.Errorf("%s: answered %d", name, resp.StatusCode)
			}
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(applied, []string{"ctr-reset"}) || !s.ContainerExists("ctr-reset") || s.ContainerExists("ctr-refused") {
		t.Errorf("applied: %v", applied)
	}
}
