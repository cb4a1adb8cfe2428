package faultproxy

import (
	"maps"
	"net/http"
	"strings"
)

// Operation names used as keys of Counts.ByOp.
const (
	OpGetProperties   = "GetProperties"   // HEAD on a blob, no comp or restype
	OpAcquire         = "Acquire"         // PUT ?comp=lease, x-ms-lease-action: acquire
	OpRenew           = "Renew"           // … renew
	OpRelease         = "Release"         // … release
	OpBreak           = "Break"           // … break
	OpChange          = "Change"          // … change
	OpSetMetadata     = "SetMetadata"     // PUT ?comp=metadata
	OpCreateBlob      = "CreateBlob"      // PUT with x-ms-blob-type, no comp or restype (Put Blob)
	OpCreateContainer = "CreateContainer" // PUT ?restype=container, no comp
	OpList            = "List"            // GET ?restype=container&comp=list (List Blobs: one page)
	OpOther           = "Other"           // everything else
)

// Counts is what reached the proxy since it started or since ResetCounts.
// Every request is counted once, when its headers have been read, whether it
// is then forwarded or not.
type Counts struct {
	// Reads counts GET and HEAD requests, Writes PUT, POST and DELETE, the
	// way Azure bills them (lease operations and Set Metadata are PUTs, so
	// writes). Other methods count in neither.
	Reads, Writes int64

	// ByOp counts requests by operation (the Op* constants); operations not
	// seen are absent. Lease operations are told apart by the
	// x-ms-lease-action header of a PUT ?comp=lease (on a blob or a
	// container); an unknown action counts as Other.
	ByOp map[string]int64

	// Injected counts the requests the proxy did not forward: answered with
	// an injected error, reset, or held in a black hole (counted on arrival,
	// even if later answered 503 or dropped).
	Injected int64

	// Lost counts the requests forwarded whose answer was lost
	// (Mode.LoseAnswer); Throttled those refused by Mode.Throttle (also
	// counted in Injected).
	Lost, Throttled int64
}

// counter accumulates Counts; it is guarded by Proxy.mu.
type counter struct {
	reads, writes, injected int64
	lost, throttled         int64
	byOp                    map[string]int64
}

func (c *counter) add(r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		c.reads++
	case http.MethodPut, http.MethodPost, http.MethodDelete:
		c.writes++
	}
	if c.byOp == nil {
		c.byOp = make(map[string]int64)
	}
	c.byOp[operation(r)]++
}

// operation names the Blob service operation r asks for, as far as Counts
// tells them apart.
func operation(r *http.Request) string {
	q := r.URL.Query()
	comp := strings.ToLower(q.Get("comp"))
	restype := strings.ToLower(q.Get("restype"))
	switch {
	case r.Method == http.MethodPut && comp == "lease":
		switch strings.ToLower(r.Header.Get("x-ms-lease-action")) {
		case "acquire":
			return OpAcquire
		case "renew":
			return OpRenew
		case "release":
			return OpRelease
		case "break":
			return OpBreak
		case "change":
			return OpChange
		}
		return OpOther
	case r.Method == http.MethodPut && comp == "metadata":
		return OpSetMetadata
	case r.Method == http.MethodPut && comp == "" && restype == "container":
		return OpCreateContainer
	case r.Method == http.MethodPut && comp == "" && restype == "" && r.Header.Get("x-ms-blob-type") != "":
		return OpCreateBlob
	case r.Method == http.MethodHead && comp == "" && restype == "":
		return OpGetProperties
	case r.Method == http.MethodGet && comp == "list" && restype == "container":
		return OpList
	}
	return OpOther
}

// Counts returns what passed through the proxy, by kind. The map is a copy.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	byOp := maps.Clone(p.counts.byOp)
	if byOp == nil {
		byOp = map[string]int64{}
	}
	return Counts{
		Reads:     p.counts.reads,
		Writes:    p.counts.writes,
		ByOp:      byOp,
		Injected:  p.counts.injected,
		Lost:      p.counts.lost,
		Throttled: p.counts.throttled,
	}
}

// ResetCounts sets every count back to zero.
func (p *Proxy) ResetCounts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts = counter{}
}
