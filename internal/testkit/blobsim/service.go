package blobsim

// service.go: the Service, one storage account's containers and block
// blobs as the model keeps them, what it tells the simulator after each
// request (OnApply, Applied), and the plain reads of its state.

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The account the model serves: Azurite's well-known development account
// (public, documented by Microsoft). Requests must be signed for Account;
// the signature itself is not checked.
const (
	Account = "devstoreaccount1"
	Key     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	// Endpoint is a blob endpoint for clients whose requests go through
	// Transport: no request reaches its address.
	Endpoint = "http://127.0.0.1:10000/" + Account
	// ConnectionString names Endpoint, with the account and its key.
	ConnectionString = "DefaultEndpointsProtocol=http;AccountName=" + Account + ";AccountKey=" + Key + ";BlobEndpoint=" + Endpoint + ";"
)

// ConnectionStringFor is the connection string of the account served by
// Handler at base, a loopback server's URL (httptest.Server.URL).
func ConnectionStringFor(base string) string {
	return "DefaultEndpointsProtocol=http;AccountName=" + Account + ";AccountKey=" + Key + ";BlobEndpoint=" +
		strings.TrimSuffix(base, "/") + "/" + Account + ";"
}

// Service is one storage account's Blob service, in memory. It is safe for
// concurrent use; requests are applied one at a time, in the order they
// take its lock. The zero Service is not usable: call New.
type Service struct {
	// order is held from the start of an apply to the end of its OnApply
	// call, so that the callback sees requests in the order applied; mu
	// guards the state and is released before the callback, which may
	// read the Service.
	order sync.Mutex
	mu    sync.Mutex

	containers map[string]*containerState
	histories  map[blobKey]*history // the tenures of every blob ever leased, deleted or not
	etags      uint64               // the last ETag handed out
	leaseIDs   uint64               // the last lease ID the service chose (acquire without one)
	onApply    func(Applied)        // guarded by order, not mu

	faultsMu sync.Mutex // serialises Plan calls; guards faults and seqs
	faults   Faults
	seqs     map[seqKey]int // Request.Seq, per client, op, container and blob

	requestIDs atomic.Uint64 // x-ms-request-id, also for refusals made without the lock
	date       atomic.Pointer[dateCache]
	metaKeys   sync.Map // metadata name → its response header key, canonical
}

// New returns an empty account: no containers.
func New() *Service {
	return &Service{
		containers: map[string]*containerState{},
		histories:  map[blobKey]*history{},
		seqs:       map[seqKey]int{},
	}
}

type containerState struct {
	name     string
	etag     string
	modified time.Time
	blobs    map[string]*blobState
	names    []string // the blobs' names, sorted (byte order, as the service lists)
}

type blobState struct {
	name     string
	meta     map[string]string // names lowercased; replaced whole on a write, never changed in place
	etag     string            // quoted, as the ETag header gives it
	created  time.Time
	modified time.Time
	length   int64
	lease    lease
	hist     *history
}

type blobKey struct{ container, blob string }

type seqKey struct{ client, op, container, blob string }

func (c *containerState) insert(b *blobState) {
	if _, ok := c.blobs[b.name]; !ok {
		i, _ := slices.BinarySearch(c.names, b.name)
		c.names = slices.Insert(c.names, i, b.name)
	}
	c.blobs[b.name] = b
}

func (c *containerState) remove(name string) {
	if _, ok := c.blobs[name]; !ok {
		return
	}
	delete(c.blobs, name)
	if i, ok := slices.BinarySearch(c.names, name); ok {
		c.names = slices.Delete(c.names, i, i+1)
	}
}

// Applied is what one request did, as the service saw it: given to the
// OnApply callback after the request was applied or refused by the
// service's rules (not for faults: a request refused, unreachable or
// abandoned before it reached the service is never applied).
type Applied struct {
	Time      time.Time // when it was applied (the service's clock, time.Now)
	Client    string    // the Transport's or Handler's client name
	Op        string    // an Op* name
	Container string
	Blob      string // "" for a request on the container or the account
	Seq       int    // as in Request
	Status    int    // the service's answer, even if a fault then loses it
	Code      string // its x-ms-error-code; "" on success

	LeaseID    string // x-ms-lease-id sent, as sent; "" if none
	ProposedID string // x-ms-proposed-lease-id sent (acquire, change); "" if none

	// The blob after the request (zero values for container requests).
	Exists   bool
	State    LeaseState
	HeldBy   string            // the lease ID holding the blob (leased or breaking); "" if none
	Until    time.Time         // when HeldBy's hold ends unless renewed (expiry or break); zero for an infinite lease
	ETag     string            // quoted
	Metadata map[string]string // names lowercased; shared with the service: read, never modify
}

// OnApply sets the function called after each request is applied (nil:
// none). It is called synchronously, one request at a time, in the order
// the requests were applied, on the requesting goroutine, before the
// answer goes back; it may read the Service (HeldThroughout, Blob, ...)
// but must not send it requests, nor call OnApply.
func (s *Service) OnApply(f func(Applied)) {
	s.order.Lock()
	defer s.order.Unlock()
	s.onApply = f
}

// SetFaults sets the faults drawn for each request that comes through a
// Transport or Handler (nil: none).
func (s *Service) SetFaults(f Faults) {
	s.faultsMu.Lock()
	defer s.faultsMu.Unlock()
	s.faults = f
}

// BlobInfo is one blob as the service holds it now.
type BlobInfo struct {
	Name     string
	ETag     string            // quoted
	Metadata map[string]string // names lowercased; a copy
	Created  time.Time         // to the nanosecond (answers say it to the second)
	Modified time.Time
	Length   int64

	State    LeaseState
	LeaseID  string        // the lease's ID while it has one: leased, breaking, broken, or expired until the blob is written
	Duration time.Duration // leased: the lease's duration; -1 for an infinite lease; 0 otherwise
	Expiry   time.Time     // leased with a fixed duration: when it expires
	BreakAt  time.Time     // breaking: when it is broken
}

// Blob reads a blob now; false if it (or its container) does not exist.
func (s *Service) Blob(container, name string) (BlobInfo, bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.blob(container, name)
	if b == nil {
		return BlobInfo{}, false
	}
	b.lease.settle(now)
	l := b.lease
	info := BlobInfo{Name: b.name, ETag: b.etag, Metadata: maps.Clone(b.meta), Created: b.created, Modified: b.modified,
		Length: b.length, State: l.state, LeaseID: l.id}
	switch l.state {
	case Leased:
		info.Duration = time.Duration(l.seconds) * time.Second
		if l.seconds < 0 {
			info.Duration = -1
		}
		info.Expiry = l.expiry
	case Breaking:
		info.BreakAt = l.breakAt
	}
	return info, true
}

// Names lists the names of a container's blobs in the order the service
// lists them; nil if the container does not exist.
func (s *Service) Names(container string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.containers[container]; c != nil {
		return slices.Clone(c.names)
	}
	return nil
}

// ContainerExists reports whether the container exists.
func (s *Service) ContainerExists(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.containers[name] != nil
}

// blob is the blob, nil if it or its container is missing; under mu.
func (s *Service) blob(container, name string) *blobState {
	if c := s.containers[container]; c != nil {
		return c.blobs[name]
	}
	return nil
}

// history is the blob's; under mu.
func (s *Service) history(container, name string) *history {
	k := blobKey{container, name}
	h := s.histories[k]
	if h == nil {
		h = &history{}
		s.histories[k] = h
	}
	return h
}
