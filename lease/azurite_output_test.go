package lease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
)

// A run's output is kept in a helper blob of its own, with the run's
// record; the listing finds it, newest first, and reading it gives it back
// whole. Writing it again (a retry) replaces it.
func TestAzuriteKeepOutput(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	c := azuriteBlob(t, ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "cron/report"})
	e := azuriteElector(t, c, "vm-a", nil)
	var terms []int64
	for i, out := range []string{"first run\n", "second run\nwith two lines\n"} {
		l, err := e.Acquire(ctx, WaitOptions{NoWait: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.RecordRunStart(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.KeepOutput(ctx, i+2, []byte("lost to a retry"), 99); err != nil {
			t.Fatal(err)
		}
		if err := l.KeepOutput(ctx, i+2, []byte(out), int64(len(out)+100)); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		terms = append(terms, l.Term)
	}
	outs, err := c.Outputs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Term != terms[1] || outs[1].Term != terms[0] {
		t.Fatalf("listed %+v, want terms %v newest first", outs, terms)
	}
	o, err := c.ReadOutput(ctx, outs[0].Blob)
	if err != nil {
		t.Fatal(err)
	}
	if string(o.Bytes) != "second run\nwith two lines\n" || o.Holder != "vm-a" || o.Term != terms[1] || o.Slot != 0 ||
		o.ExitCode == nil || *o.ExitCode != 3 || o.Written != int64(len(o.Bytes)+100) || o.Start.IsZero() || o.End.Before(o.Start) {
		t.Errorf("read back %+v (%q)", o, o.Bytes)
	}
	if o.Blob != "~output/cron/report~"+fmt.Sprint(terms[1]) {
		t.Errorf("kept in %q", o.Blob)
	}
	if _, err := c.ReadOutput(ctx, OutputBlob("cron/report", 0, 999)); !errors.Is(err, ErrNoOutput) {
		t.Errorf("a missing output: %v, want ErrNoOutput", err)
	}
	// The lease's own listing (status, the slot poll) never meets them.
	v, err := c.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.SlotCount != 1 || len(v.Slots) != 1 {
		t.Errorf("the lease's view: %+v", v)
	}
}

// A slot keeps the outputs of as many runs as its history: older ones are
// deleted, another slot's are left alone.
func TestAzuritePruneOutputs(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "job"}
	c := azuriteBlob(t, cfg)
	l, err := azuriteElector(t, c, "vm-a", nil).Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	// Outputs of terms 2 to 25 that ended long ago (left from before the
	// lease blob was made anew: the terms began again), and this run's,
	// term 1, which is the newest.
	put := func(name string, end time.Time) {
		md := map[string]*string{}
		if !end.IsZero() {
			e := formatTime(end)
			md[mdOutEnd] = &e
		}
		if _, err := sdkBlob(t, cs, cfg.Container, name).Upload(ctx, streaming.NopCloser(strings.NewReader("x")),
			&blockblob.UploadOptions{Metadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for term := int64(2); term <= 25; term++ {
		put(OutputBlob("job", 0, term), long.Add(time.Duration(term)*time.Hour))
	}
	for term := int64(1); term <= 3; term++ {
		put(OutputBlob("job", 1, term), time.Time{})
	}
	put(OutputPrefix("job")+"notes", time.Time{}) // not leaderrun's: left alone
	if err := l.KeepOutput(ctx, 0, []byte("term 1"), 6); err != nil {
		t.Fatal(err)
	}
	if err := l.PruneOutputs(ctx); err != nil {
		t.Fatal(err)
	}
	names, err := c.Container().ListNames(ctx, OutputPrefix("job"))
	if err != nil {
		t.Fatal(err)
	}
	var slot0, slot1 []int64
	for _, n := range names {
		slot, term, ok := parseOutputBlob("job", n)
		switch {
		case !ok && n != OutputPrefix("job")+"notes":
			t.Errorf("unexpected blob %q", n)
		case ok && slot == 0:
			slot0 = append(slot0, term)
		case ok:
			slot1 = append(slot1, term)
		}
	}
	if len(slot0) != historyLen || len(slot1) != 3 || len(names) != historyLen+4 {
		t.Fatalf("left %q", names)
	}
	for _, term := range slot0 {
		if term >= 2 && term <= 6 {
			t.Errorf("the output of term %d was kept; the newest %d are this run's (term 1) and terms 7 to 25", term, historyLen)
		}
	}
	if !slices.Contains(slot0, 1) {
		t.Error("this run's output (term 1, the newest) was deleted")
	}
}

// Writing the output never takes longer than its context allows, however
// the service answers: a hanging upload, or one refused again and again.
func TestAzuriteKeepOutputBounded(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	proxy, pcs := faultproxy.Start(t, cs)
	c := azuriteBlob(t, ClientConfig{ConnectionString: pcs, Container: uniqueContainer(t), Blob: "job"})
	l, err := azuriteElector(t, c, "vm-a", nil).Acquire(t.Context(), WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(t.Context())
	for _, m := range []faultproxy.Mode{
		{Only: "~output/", BlackHole: true},
		{Only: "~output/", ErrorRate: 1, ErrorStatus: 503},
	} {
		proxy.Set(m)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		start := time.Now()
		err := l.KeepOutput(ctx, 0, bytes.Repeat([]byte("y\n"), 1000), 2000)
		took := time.Since(start)
		cancel()
		if err == nil || took > 3*time.Second {
			t.Errorf("%+v: KeepOutput took %s (error %v), want a failure within its 2s", m, took, err)
		}
	}
	proxy.Set(faultproxy.Mode{})
}
