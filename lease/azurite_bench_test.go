package lease

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"
)

// Benchmarks of the requests leaderrun makes, against the Azurite emulator
// on loopback (LEADERRUN_TEST_CONNECTION_STRING, as for the tests; skipped
// without it). They time the client's own path — azcore's pipeline, shared
// key signing, the bounded transport — plus the emulator's answer; a real
// account adds a network round trip to each. scripts/bench.sh puts the
// whole command in context.

func benchBlob(b *testing.B, blobName string) *Blob {
	b.Helper()
	cs := os.Getenv("LEADERRUN_TEST_CONNECTION_STRING")
	if cs == "" {
		b.Skip("LEADERRUN_TEST_CONNECTION_STRING is not set (scripts/azurite.sh start prints one)")
	}
	suffix := make([]byte, 8)
	if _, err := rand.Read(suffix); err != nil {
		b.Fatal(err)
	}
	c, err := NewLeaseBlob(ClientConfig{ConnectionString: cs, Container: "bench-" + hex.EncodeToString(suffix), Blob: blobName})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func benchElector(b *testing.B, c *Blob) *Elector {
	b.Helper()
	e, err := NewElector(c, Config{Duration: 15 * time.Second, KillGrace: 10 * time.Second, Identity: "bench", Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkAzuriteProperties is one Get Blob Properties: what a waiting
// follower sends every poll interval.
func BenchmarkAzuriteProperties(b *testing.B) {
	c := benchBlob(b, "props")
	ctx := b.Context()
	l, err := benchElector(b, c).Acquire(ctx, WaitOptions{NoWait: true}) // creates the blob
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Release(ctx) })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Properties(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAzuriteRenew is one Renew Lease: what the holder sends every
// renew interval.
func BenchmarkAzuriteRenew(b *testing.B) {
	c := benchBlob(b, "renew")
	ctx := b.Context()
	l, err := benchElector(b, c).Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Release(ctx) })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.api.renewLease(ctx, l.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAzuriteTerm is one whole term on a free lease, as a run of
// leaderrun makes it: Acquire (acquire with a read alongside, then the write
// of the new term), RecordRunStart (nothing to write right after Acquire),
// RecordRunEnd, Release.
func BenchmarkAzuriteTerm(b *testing.B) {
	c := benchBlob(b, "term")
	e := benchElector(b, c)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		l, err := e.Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.RecordRunStart(ctx); err != nil {
			b.Fatal(err)
		}
		if err := l.RecordRunEnd(ctx, 0); err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
