package leader

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/monitor"
)

// stuckTextfile is a textfile write that hangs until released, as on a
// hung file system, and records the writes in the order they began.
type stuckTextfile struct {
	release chan struct{}
	mu      sync.Mutex
	began   []monitor.Run
}

func (s *stuckTextfile) write(_ string, r monitor.Run, _ hclog.Logger) error {
	s.mu.Lock()
	s.began = append(s.began, r)
	s.mu.Unlock()
	<-s.release
	return nil
}

// A textfile write that hangs holds up neither the run's end (recording
// it, the stop, the release) nor leaderrun's exit for more than
// textfileWait; the writes keep their order; one WARNING says so.
func TestTextfileNeverHoldsTheRunUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := &stuckTextfile{release: make(chan struct{})}
		var logs bytes.Buffer
		m := &runMonitor{log: hclog.New(&hclog.LoggerOptions{Output: &logs}), lease: "job", metricsFile: "job.prom", writeTextfile: stuck.write}
		l := &lease.Lease{Identity: "vm-1", Term: 3}

		t0 := time.Now()
		m.started(l)
		m.ended(l, 0, nil)
		if d := time.Since(t0); d != 0 {
			t.Errorf("started and ended took %s with the textfile hung, want no wait", d)
		}
		m.wait()
		if d := time.Since(t0); d != textfileWait {
			t.Errorf("the wait after the release took %s, want textfileWait (%s)", d, textfileWait)
		}
		if n := strings.Count(logs.String(), "[WARN]"); n != 1 {
			t.Errorf("%d WARNING lines, want 1:\n%s", n, logs.String())
		}
		close(stuck.release)
		synctest.Wait()
		if len(stuck.began) != 2 || stuck.began[0].Start.IsZero() || stuck.began[1].ExitCode == nil {
			t.Errorf("writes %+v, want the start, then the end", stuck.began)
		}
	})
}

// A skip, or a lease held by another host, waits for its textfile write
// at most textfileWait: a hung file system cannot pile up invocations.
func TestTextfileSkipWaitIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := &stuckTextfile{release: make(chan struct{})}
		m := &runMonitor{log: hclog.NewNullLogger(), lease: "job", metricsFile: "job.prom", writeTextfile: stuck.write}
		t0 := time.Now()
		m.invoked()
		if d := time.Since(t0); d != textfileWait {
			t.Errorf("invoked took %s, want textfileWait (%s)", d, textfileWait)
		}
		close(stuck.release)
		synctest.Wait()
	})
}
