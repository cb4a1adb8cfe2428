package chaos

// Watching the fault proxy for the holder's acquire and renew requests, to
// bound when its last successful one was sent.

import (
	"sync"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
)

// leaseOps watches the proxy's count of acquire and renew requests (polled
// every 5 ms), and remembers when it last grew; and when the first release
// request reached the proxy.
type leaseOps struct {
	mu        sync.Mutex
	n         int64
	last      time.Time
	releaseAt time.Time
	quit      chan struct{}
	done      chan struct{}
}

func leaseOpCount(c faultproxy.Counts) int64 {
	return c.ByOp[faultproxy.OpAcquire] + c.ByOp[faultproxy.OpRenew]
}

func watchLeaseOps(p *faultproxy.Proxy) *leaseOps {
	w := &leaseOps{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.quit:
				return
			case <-tick.C:
			}
			c := p.Counts()
			n := leaseOpCount(c)
			w.mu.Lock()
			if n != w.n {
				w.n, w.last = n, time.Now()
			}
			if c.ByOp[faultproxy.OpRelease] > 0 && w.releaseAt.IsZero() {
				w.releaseAt = time.Now()
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *leaseOps) stop() {
	close(w.quit)
	<-w.done
}

// snapshot returns the count and when it last grew.
func (w *leaseOps) snapshot() (int64, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n, w.last
}

// released returns when the first release request was seen at the proxy
// (within 5 ms after it arrived), zero if none was.
func (w *leaseOps) released() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.releaseAt
}

// lastBefore returns an upper bound of when the last lease request counted
// in c (read at readAt) reached the proxy.
func (w *leaseOps) lastBefore(c faultproxy.Counts, readAt time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if leaseOpCount(c) == w.n && !w.last.IsZero() {
		return w.last
	}
	return readAt
}
