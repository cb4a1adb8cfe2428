package faultproxy

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestLoseAnswer(t *testing.T) {
	meta := http.Header{"X-Ms-Meta-Holder": {"a"}}
	tests := []struct {
		name     string
		lose     LoseAnswer
		wantCode string // "" with Status 0: no answer at all
	}{
		{"500 InternalError", LoseAnswer{Op: OpSetMetadata, Count: 1, Status: 500}, "InternalError"},
		{"500 OperationTimedOut", LoseAnswer{Op: OpSetMetadata, Count: 1, Status: 500, Code: "OperationTimedOut"}, "OperationTimedOut"},
		{"dropped", LoseAnswer{Op: OpSetMetadata, Count: 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t, nil)
			p := newProxy(t, b.srv.URL)
			c := newClient(t, 5*time.Second)
			blob := p.URL() + "/devstoreaccount1/leaderrun/cron%2Freport"
			p.Set(Mode{LoseAnswer: tt.lose})

			// Another operation passes untouched.
			if resp, _, err := do(t, c, "HEAD", blob, nil, nil); err != nil || resp.StatusCode != 200 {
				t.Fatalf("HEAD: %v %v", resp, err)
			}
			resp, _, err := do(t, c, "PUT", blob+"?comp=metadata", meta, nil)
			if got := b.hits.Load(); got != 2 {
				t.Errorf("the target saw %d requests, want 2: a lost answer's request is forwarded", got)
			}
			if tt.wantCode == "" {
				if err == nil {
					t.Fatalf("got an answer %d, want none", resp.StatusCode)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != 500 || resp.Header.Get("x-ms-error-code") != tt.wantCode {
					t.Errorf("got %d %q, want 500 %q", resp.StatusCode, resp.Header.Get("x-ms-error-code"), tt.wantCode)
				}
			}
			// Count 1: the next one gets the target's own answer.
			if resp, _, err := do(t, c, "PUT", blob+"?comp=metadata", meta, nil); err != nil || resp.StatusCode/100 != 2 {
				t.Fatalf("second PUT: %v %v", resp, err)
			}
			if got := p.Counts(); got.Lost != 1 || got.Injected != 0 {
				t.Errorf("Counts: Lost %d Injected %d, want 1 and 0", got.Lost, got.Injected)
			}
		})
	}
	t.Run("path", func(t *testing.T) {
		b := newBackend(t, nil)
		p := newProxy(t, b.srv.URL)
		c := newClient(t, 5*time.Second)
		p.Set(Mode{LoseAnswer: LoseAnswer{Op: OpSetMetadata, Path: "~pause", Status: 500}})
		base := p.URL() + "/devstoreaccount1/leaderrun/"
		if resp, _, err := do(t, c, "PUT", base+"job?comp=metadata", meta, nil); err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("another blob: %v %v", resp, err)
		}
		for range 2 { // Count 0: every matching request
			if resp, _, err := do(t, c, "PUT", base+"job~pause?comp=metadata", meta, nil); err != nil || resp.StatusCode != 500 {
				t.Fatalf("the marker: %v %v", resp, err)
			}
		}
		if got := b.hits.Load(); got != 3 {
			t.Errorf("the target saw %d requests, want 3", got)
		}
	})
}

func TestThrottle(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, b.srv.URL)
	c := newClient(t, 5*time.Second)
	base := p.URL() + "/devstoreaccount1/leaderrun/"
	// A rate too low to refill during the test: the burst alone decides.
	p.Set(Mode{Throttle: Throttle{Rate: 0.001, Burst: 2}})
	var codes []string
	for range 3 {
		resp, _, err := do(t, c, "HEAD", base+"a", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, resp.Header.Get("x-ms-error-code"))
		if resp.StatusCode != 200 && resp.StatusCode != 503 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if got := strings.Join(codes, ","); got != ",,ServerBusy" {
		t.Errorf("error codes %q, want two passed and one ServerBusy", got)
	}
	// Another blob has a bucket of its own.
	if resp, _, err := do(t, c, "HEAD", base+"b", nil, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("another blob: %v %v", resp, err)
	}
	if got := p.Counts(); got.Throttled != 1 || got.Injected != 1 || b.hits.Load() != 3 {
		t.Errorf("Throttled %d Injected %d target hits %d, want 1, 1, 3", got.Throttled, got.Injected, b.hits.Load())
	}
	// 500 OperationTimedOut instead; Set starts new buckets.
	p.Set(Mode{Throttle: Throttle{Rate: 0.001, Burst: 1, Status: 500, Code: "OperationTimedOut"}})
	do(t, c, "HEAD", base+"a", nil, nil)
	resp, _, err := do(t, c, "GET", base+"a", nil, nil)
	if err != nil || resp.StatusCode != 500 || resp.Header.Get("x-ms-error-code") != "OperationTimedOut" {
		t.Errorf("got %v %v, want 500 OperationTimedOut", resp, err)
	}
}

func TestBucketRefill(t *testing.T) {
	b := &buckets{t: Throttle{Rate: 10}, m: map[string]*bucket{}}
	t0 := time.Unix(1000, 0)
	passed := 0
	for range 15 {
		if b.take("/x", t0) {
			passed++
		}
	}
	if passed != 10 {
		t.Errorf("a full bucket passed %d at once, want 10 (one second's worth)", passed)
	}
	if b.take("/x", t0.Add(50*time.Millisecond)) {
		t.Error("half a token passed")
	}
	if !b.take("/x", t0.Add(100*time.Millisecond)) {
		t.Error("a whole token after 100 ms at 10/s was refused")
	}
	if b.take("/x", t0.Add(100*time.Millisecond)) {
		t.Error("a second token at the same moment passed")
	}
	var none *buckets
	if !none.take("/x", t0) {
		t.Error("no throttle refused a request")
	}
}
