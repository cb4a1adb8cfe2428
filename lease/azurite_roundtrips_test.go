package lease

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// Request counts against the emulator: what a start and a handover cost.

// recordingAPI passes requests through and records them.
type recordingAPI struct {
	blobAPI
	mu       sync.Mutex
	ops      []string
	ifMatch  []string
	inFlight int
	maxIn    int
}

func (r *recordingAPI) enter(op string) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
	r.inFlight++
	r.maxIn = max(r.maxIn, r.inFlight)
	return func() {
		r.mu.Lock()
		r.inFlight--
		r.mu.Unlock()
	}
}

func (r *recordingAPI) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops, r.ifMatch, r.maxIn = nil, nil, 0
}

func (r *recordingAPI) snapshot() ([]string, []string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops), slices.Clone(r.ifMatch), r.maxIn
}

func (r *recordingAPI) acquireLease(ctx context.Context, id string, s int) (answer, error) {
	defer r.enter(opAcquire)()
	return r.blobAPI.acquireLease(ctx, id, s)
}

func (r *recordingAPI) getProperties(ctx context.Context) (blobProps, error) {
	defer r.enter(opGetProps)()
	return r.blobAPI.getProperties(ctx)
}

func (r *recordingAPI) setMetadata(ctx context.Context, id, ifMatch string, md map[string]string) (answer, error) {
	defer r.enter(opSetMeta)()
	r.mu.Lock()
	r.ifMatch = append(r.ifMatch, ifMatch)
	r.mu.Unlock()
	return r.blobAPI.setMetadata(ctx, id, ifMatch, md)
}

// opPauseProps is a read of the pause marker, as recordingAPI records it.
const opPauseProps = "pause-" + opGetProps

// markerRecorder records the reads of the pause marker in the lease's
// recordingAPI, so that one list shows the order of both.
type markerRecorder struct {
	blobAPI
	r *recordingAPI
}

func (m markerRecorder) getProperties(ctx context.Context) (blobProps, error) {
	defer m.r.enter(opPauseProps)()
	return m.blobAPI.getProperties(ctx)
}

func recording(c *Blob) *recordingAPI {
	r := &recordingAPI{blobAPI: c.api}
	c.api = r
	if c.marker != nil {
		c.marker.api = markerRecorder{blobAPI: c.marker.api, r: r}
	}
	return r
}

// Against the emulator: a start on a free lease is the acquire alone, then
// the blob's and the pause marker's reads together, then the conditional
// write (three round trips); a handover is the marker's read, acquire and
// write.
func TestAzuriteAcquireRoundTrips(t *testing.T) {
	cs := azuriteConnectionString(t)
	t.Parallel()
	ctx := t.Context()
	cfg := ClientConfig{ConnectionString: cs, Container: uniqueContainer(t), Blob: "rt"}
	ca, cb := azuriteBlob(t, cfg), azuriteBlob(t, cfg)
	ea := azuriteElector(t, ca, "vm-a", nil)
	l, err := ea.Acquire(ctx, WaitOptions{NoWait: true}) // creates the blob
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	ra := recording(ca)
	l, err = ea.Acquire(ctx, WaitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	ops, ifMatch, maxIn := ra.snapshot()
	if len(ops) != 4 || ops[0] != opAcquire || !slices.Contains(ops[1:3], opGetProps) ||
		!slices.Contains(ops[1:3], opPauseProps) || ops[3] != opSetMeta || ifMatch[0] == "" {
		t.Errorf("fresh start: %v (If-Match %q), want the acquire, the reads, then a conditional write", ops, ifMatch)
	}
	t.Logf("fresh start: %v, at most %d in flight", ops, maxIn)
	if l.Term != 2 {
		t.Errorf("term %d, want 2", l.Term)
	}

	rb := recording(cb)
	waiting := make(chan struct{})
	var once sync.Once
	go func() {
		<-waiting
		time.Sleep(300 * time.Millisecond)
		rb.reset() // from here on: the last polls, then the handover
		if err := l.Release(ctx); err != nil {
			t.Error(err)
		}
	}()
	lb, err := azuriteElector(t, cb, "vm-b", func(c *Config) { c.PollInterval = 100 * time.Millisecond }).
		Acquire(ctx, WaitOptions{Timeout: 10 * time.Second, OnWait: func(*Properties) { once.Do(func() { close(waiting) }) }})
	if err != nil {
		t.Fatal(err)
	}
	ops, ifMatch, _ = rb.snapshot()
	i := slices.Index(ops, opAcquire)
	if i < 2 || ops[i-2] != opGetProps || ops[i-1] != opPauseProps || !slices.Equal(ops[i:], []string{opAcquire, opSetMeta}) ||
		ifMatch[0] == "" || slices.Contains(ops[:i-1], opPauseProps) {
		t.Errorf("handover: %v (If-Match %q), want polls, then the pause's read, acquire and a conditional write", ops, ifMatch)
	}
	if lb.Term != 3 || mustProps(t, cb).Term != 3 {
		t.Errorf("term %d, want 3", lb.Term)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
