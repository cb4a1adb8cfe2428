package sim

import (
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/exit"
)

// The checker's "nothing lost" in a world of two hosts: host0 runs a
// COMMAND from 40 s to commandEnd, host1 waits; both go down at once for
// reasons of their own (a guard that failed after each acquired, 100 s and
// 101 s), host0 is up again at 105 s and host1 runs a COMMAND at 109 s.
// The fleet's time down excuses the gap after it, never one before it.
func TestFleetDownExcusesOnlyWhatFollows(t *testing.T) {
	for _, tc := range []struct {
		name       string
		commandEnd int
		want       bool // a violation
	}{
		{"the gap after the fleet went down", 100, false},
		{"a gap while both hosts waited, 50 s to 100 s", 50, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			s := func(sec int) time.Time { return start.Add(time.Duration(sec) * time.Second) }
			w := &world{plan: Plan{Mode: ModeServe, PollInterval: time.Second, LeaseDuration: 15 * time.Second,
				KillGrace: 5 * time.Second, FaultEnd: 0, End: 200 * time.Second}, start: start}
			w.chk = newChecker(w)
			h0, h1 := &host{w: w, idx: 0, name: "host0"}, &host{w: w, idx: 1, name: "host1"}
			w.hosts = []*host{h0, h1}
			inv := func(h *host, began, ended int, code int) *invocation {
				i := &invocation{w: w, h: h, began: s(began), exit: code}
				if ended >= 0 {
					i.ended, i.endedAt = true, s(ended)
				}
				w.chk.invs = append(w.chk.invs, i)
				return i
			}
			inv(h1, 0, 101, exit.NotExec) // waits, acquires late, its guard fails
			runs := inv(h0, 1, tc.commandEnd, 0)
			if tc.commandEnd < 100 {
				inv(h0, tc.commandEnd+5, 100, exit.NotExec) // waits, acquires late, its guard fails
			}
			inv(h0, 105, -1, 0) // waits to the end
			late := inv(h1, 108, -1, 0)
			c1 := &child{inv: runs, at: s(40), diedAt: s(tc.commandEnd)}
			runs.kids = []*child{c1}
			c2 := &child{inv: late, at: s(109)}
			late.kids = []*child{c2}
			w.chk.launches = []*child{c1, c2}
			w.chk.final()
			if v := w.chk.failed(); (len(v) > 0) != tc.want {
				t.Errorf("violations %q; want one: %v", v, tc.want)
			}
		})
	}
}
