package sim

// run.go: one seed's world, run to its end, and its outcome.

import (
	"io"
	"sync"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
	"github.com/leaderrun/leaderrun/lease"
)

// Result is how one seed's world went.
type Result struct {
	Plan       Plan
	Violations []string // the broken invariants, in order; none: passed
	Launches   int      // COMMANDs launched
	Retries    int      // of them, retries (--retries)
	Triggered  int      // of them, runs of a trigger
	Requests   int      // requests the service applied or refused
	w          *world
}

// WriteTrace writes the seed's whole trace: the plan, every request the
// service applied, every launch and death, every event, and leaderrun's log.
func (r *Result) WriteTrace(out io.Writer) { r.w.writeTrace(out) }

// Run runs one seed's world to its end. It must be called inside a
// testing/synctest bubble: the world's hours pass in virtual time.
func Run(seed uint64, o Options) *Result {
	p := NewPlan(seed)
	if o.Mutate != nil {
		o.Mutate(&p)
	}
	w := &world{plan: p, opts: o, stopped: make(chan struct{})}
	w.chk = newChecker(w)
	w.svc = blobsim.New()
	w.svc.SetFaults(faults{w})
	var mu sync.Mutex
	requests := 0
	w.svc.OnApply(func(a blobsim.Applied) {
		mu.Lock()
		requests++
		mu.Unlock()
		w.chk.applied(a)
	})
	w.run()
	// Let what the end set going (a last request's answer) settle.
	time.Sleep(time.Second)
	r := &Result{Plan: p, Violations: w.chk.failed(), Launches: len(w.chk.launches), Requests: requests, w: w}
	for _, c := range w.chk.launches {
		switch c.env["LEADERRUN_TRIGGER"] {
		case lease.TriggerRetry:
			r.Retries++
		case lease.TriggerManual:
			r.Triggered++
		}
	}
	return r
}
