package blobsim_test

// The cost of one request through the SDK and the Transport, and of the
// model alone: go test -run '^$' -bench . -benchmem ./internal/testkit/blobsim/

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
)

// One SDK Get Blob Properties, as lease reads a blob.
func BenchmarkGetProperties(b *testing.B) {
	s := blobsim.New()
	setup(b, s)
	v := "vm-1"
	bc := newClient(b, s, "a", 10*time.Second).blob("x")
	if _, err := bc.SetMetadata(context.Background(), map[string]*string{"holder": &v, "term": &v, "acquired": &v}, nil); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bc.GetProperties(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// One SDK acquire (by the holder, as a claim retried) and one renew.
func BenchmarkAcquireRenew(b *testing.B) {
	s := blobsim.New()
	setup(b, s)
	l := newClient(b, s, "a", 10*time.Second).lease("x", idA)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.AcquireLease(ctx, 15, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := l.RenewLease(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// The model alone: one Get Blob Properties through the Transport, without
// the SDK's pipeline.
func BenchmarkTransportGetProperties(b *testing.B) {
	s := blobsim.New()
	setup(b, s)
	tr := s.Transport("a")
	req, err := http.NewRequest(http.MethodHead, blobsim.Endpoint+"/"+ctr+"/x", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header["Authorization"] = []string{"SharedKey devstoreaccount1:c2lnbmF0dXJl"}
	req.Header["x-ms-version"] = []string{"2026-06-06"}
	req.Header["x-ms-date"] = []string{"Sat, 01 Jan 2000 00:00:00 GMT"}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := tr.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(resp, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
