package main

import (
	"sync"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
)

// opClock timestamps the requests that pass a counting proxy: every
// millisecond it reads the proxy's counts and notes when each operation's count
// grew. A timestamp is late by up to the polling period plus scheduling
// delay; the proxy counts a request when its headers have arrived.
type opClock struct {
	p     *faultproxy.Proxy
	mu    sync.Mutex
	times map[string][]time.Time
	last  map[string]int64
	once  sync.Once
	stop  chan struct{}
	done  chan struct{}
}

func clockOps(p *faultproxy.Proxy) *opClock {
	c := &opClock{p: p, times: map[string][]time.Time{}, last: map[string]int64{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				counts := p.Counts()
				now := time.Now()
				c.mu.Lock()
				for op, n := range counts.ByOp {
					if n > c.last[op] {
						c.times[op] = append(c.times[op], now)
						c.last[op] = n
					}
				}
				c.mu.Unlock()
			}
		}
	}()
	return c
}

// close stops the clock; the times seen stay readable.
func (c *opClock) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

// firstAfter is when op was first seen after t.
func (c *opClock) firstAfter(op string, t time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, at := range c.times[op] {
		if at.After(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

// lastBefore is when op was last seen before t.
func (c *opClock) lastBefore(op string, t time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out time.Time
	for _, at := range c.times[op] {
		if at.Before(t) {
			out = at
		}
	}
	return out, !out.IsZero()
}
