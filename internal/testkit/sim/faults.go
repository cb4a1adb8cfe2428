package sim

// faults.go: the service's hard answers, drawn per request from the seed
// (blobsim.Faults): the same request of the same host gets the same fault
// whatever ran before it.

import (
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
)

// faults draws a plan for each request from the seed and the world's plan.
type faults struct {
	w *world
}

// writes are the operations that change something at the service: their
// answers can be lost after they were applied.
var writes = map[string]bool{
	"acquire": true, "renew": true, "release": true, "break": true, "setMetadata": true,
	"putBlob": true, "deleteBlob": true, "createContainer": true,
}

func (f faults) Plan(req blobsim.Request) blobsim.Plan {
	w := f.w
	r := stream(w.plan.Seed, "request", req.Client, req.Op, req.Blob, req.Seq)
	// Every request takes a little time each way, drawn to the
	// nanosecond: no two requests reach the service at the same instant.
	pl := blobsim.Plan{
		Delay:       time.Duration(100_000 + r.Int64N(3_000_000)),
		AnswerDelay: time.Duration(100_000 + r.Int64N(3_000_000)),
	}
	now := w.since()
	if now >= w.plan.FaultEnd {
		return pl
	}
	host := w.hostOf(req.Client)
	for _, c := range w.plan.Faults.Cutoffs {
		if c.Host == host && now >= c.From && now < c.To {
			if c.Hang {
				pl.Delay = time.Hour // until the request's deadline: never applied
			} else {
				pl.Unreachable = true
			}
			return pl
		}
	}
	for _, b := range w.plan.Faults.Bursts {
		if now >= b.From && now < b.To {
			pl.Refuse = 503
			return pl
		}
	}
	fr := w.plan.Faults
	switch {
	case r.Float64() < fr.Refuse:
		switch r.IntN(4) {
		case 0:
			pl.Refuse, pl.RefuseCode = 500, "OperationTimedOut"
		case 1:
			pl.Unreachable = true
		default:
			pl.Refuse = 503
		}
	case writes[req.Op] && r.Float64() < fr.Lose:
		pl.Lose = true
		pl.LoseAs = []int{0, -1, 500, 503}[r.IntN(4)]
	}
	if r.Float64() < fr.Slow {
		slow := time.Duration(r.Int64N(int64(w.plan.LeaseDuration)))
		if r.IntN(2) == 0 {
			pl.Delay += slow
		} else {
			pl.AnswerDelay += slow
		}
	}
	return pl
}
