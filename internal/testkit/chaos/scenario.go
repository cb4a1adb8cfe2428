package chaos

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
)

// Kind is a fault scenario. Every trial of every kind stages the same cast:
// a holder whose requests go through a fault proxy, running the chaos child
// (with grandchildren), and a follower that talks to the storage directly
// and polls every 200 ms. Both use leaderrun's defaults otherwise: a 15 s
// lease renewed every 5 s, a 10 s kill grace (so a 5 s stop budget).
type Kind int

// The scenarios. None may show two children running at once: in 9 the
// follower was waiting, and waits out the holder's lease before it creates
// the deleted blob again.
const (
	BlackHole   Kind = 1 + iota // the proxy stops answering mid-run
	Reset                       // the proxy resets every connection mid-run
	FlakyShort                  // 5xx/429 bursts or latency spikes that end in time
	FlakyLong                   // the same, lasting past the stop deadline
	Break                       // an operator runs `leaderrun break`
	Kill9                       // kill -9 of the holder's leaderrun
	Stubborn                    // the child ignores SIGTERM, has grandchildren; then a black hole
	Freeze                      // the holder's leaderrun is SIGSTOPped longer than the lease
	StorageLoss                 // the lease blob or its container is deleted
	Eviction                    // a Spot eviction (Preempt) of the holder's VM is announced (--scheduled-events)
	Throttle                    // the holder's blob is throttled (503 ServerBusy or 500 OperationTimedOut beyond a rate)
	LostAnswer                  // the holder's renewals are applied but their answers lost (500, or none)
	Escape                      // the child's grandchildren leave its group (timeout, setsid, a double fork); then a lost lease, an outside SIGTERM or kill -9
	Deputy                      // a graceful handover whose deputy is killed, frozen or cut off around it (deputy.go)
)

var kindNames = map[Kind]string{
	BlackHole:   "blackhole",
	Reset:       "reset",
	FlakyShort:  "flaky-short",
	FlakyLong:   "flaky-long",
	Break:       "break",
	Kill9:       "kill9",
	Stubborn:    "stubborn",
	Freeze:      "freeze",
	StorageLoss: "storage-loss",
	Eviction:    "eviction",
	Throttle:    "throttle",
	LostAnswer:  "lost-answer",
	Escape:      "escape",
	Deputy:      "deputy",
}

// Kinds returns every scenario, in order.
func Kinds() []Kind {
	return []Kind{BlackHole, Reset, FlakyShort, FlakyLong, Break, Kill9, Stubborn, Freeze, StorageLoss, Eviction, Throttle, LostAnswer, Escape, Deputy}
}

// String is the scenario's name, as in TestChaos/NAME and the driver's -s.
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return "scenario" + strconv.Itoa(int(k))
}

// Safety reports whether the scenario is held to the safety rule: no two
// children at once, ever: every scenario.
func (k Kind) Safety() bool { return kindNames[k] != "" }

// Expect says what leaderrun must do in the scenario.
func (k Kind) Expect() string {
	switch k {
	case BlackHole, Reset, FlakyLong:
		return "child stopped before t_ok+14s, holder exits 76, follower starts only after"
	case FlakyShort:
		return "leadership survives: child never stopped, no exit 76, follower never runs"
	case Break:
		return "holder stops on the next renewal (409), exits 76; follower starts only once the holder's group is gone"
	case Kill9:
		return "child and grandchild die at once; follower starts after expiry"
	case Stubborn:
		return "whole group SIGKILLed before t_ok+14s; holder exits 76"
	case Freeze:
		return "the guard kills the group at the kill deadline while leaderrun is frozen; no overlap; holder exits 76 on waking"
	case StorageLoss:
		return "holder stops on the next renewal (404/409); the waiting follower waits out its lease before creating the blob again, the term continues: no overlap"
	case Eviction:
		return "holder steps down: its group dead before NotBefore, exit 76, lease released; follower starts within a poll of the release"
	case Throttle, LostAnswer:
		return "leadership kept (a renewal got through), or the child stopped before t_ok+14s and the holder exits 76; the follower starts only after"
	case Escape:
		return "every process of the holder's run, in whatever group or session, dead before the lease can pass: lost lease as blackhole, outside SIGTERM before the release, kill -9 at once"
	case Deputy:
		return "the holder stops on SIGTERM and releases; the deputy, killed, frozen or cut off around it, or the follower takes over, never two children at once"
	}
	return ""
}

// ParseKinds reads a list of scenarios: names or numbers, separated by
// commas, with ranges of numbers ("1-7"); "all" or "" means every scenario.
// The result keeps the order given, without duplicates.
func ParseKinds(s string) ([]Kind, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return Kinds(), nil
	}
	var out []Kind
	seen := map[Kind]bool{}
	add := func(k Kind) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if lo, hi, ok := strings.Cut(item, "-"); ok {
			a, errA := strconv.Atoi(lo)
			b, errB := strconv.Atoi(hi)
			if errA == nil && errB == nil {
				if a < 1 || b > len(kindNames) || a > b {
					return nil, fmt.Errorf("chaos: bad scenario range %q: use 1 to %d", item, len(kindNames))
				}
				for n := a; n <= b; n++ {
					add(Kind(n))
				}
				continue
			}
		}
		if n, err := strconv.Atoi(item); err == nil {
			if n < 1 || n > len(kindNames) {
				return nil, fmt.Errorf("chaos: no scenario %d: use 1 to %d", n, len(kindNames))
			}
			add(Kind(n))
			continue
		}
		found := false
		for k, name := range kindNames {
			if name == item {
				add(k)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("chaos: unknown scenario %q (known: %s)", item, strings.Join(names(), ", "))
		}
	}
	return out, nil
}

func names() []string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, k.String())
	}
	return out
}

// Params are one trial's choices: when the fault starts, how long it lasts
// and what exactly it is.
type Params struct {
	// Warmup is how long the holder's child runs, with the follower
	// waiting, before the fault (FlakyShort: before looking for a renewal
	// to align the fault to). It sets the fault's phase in the renew cycle.
	Warmup time.Duration
	// Offset (FlakyShort only): the fault starts this long after a lease
	// request is seen at the proxy.
	Offset time.Duration
	// Length is how long the proxy's fault lasts (BlackHole, Reset,
	// FlakyShort, FlakyLong, Stubborn) or the freeze (Freeze).
	Length time.Duration
	// Mode is the proxy's mode during the fault.
	Mode faultproxy.Mode
	// Delete (StorageLoss only): "container" or "blob".
	Delete string
	// Notice (Eviction only): the Preempt's NotBefore is this long after
	// it appears (Azure gives Spot VMs 30 s).
	Notice time.Duration
	// Grandchildren the holder's child starts; with IgnoreTerm, the child
	// and they ignore SIGTERM.
	Grandchildren int
	IgnoreTerm    bool
	// Escape (Escape only): how the grandchildren leave the child's group:
	// "timeout", "setsid" or "double-fork" (the chaos child's -escape).
	// Stop: how the holder's run ends: "lost" (a black hole for Length),
	// "sigterm" (an outside SIGTERM to its leaderrun) or "kill9".
	Escape, Stop string
	// Deputy (Deputy only): the deputy's fault, "kill9", "freeze" (for
	// Length) or "partition" (its proxy in Mode for Length), Around the
	// holder's SIGTERM (negative: before it).
	Deputy string
	Around time.Duration
}

func (p Params) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "warmup %s", fmtDur(p.Warmup))
	if p.Offset > 0 {
		fmt.Fprintf(&b, ", fault at renewal+%s", fmtDur(p.Offset))
	}
	if m := modeString(p.Mode); m != "" {
		fmt.Fprintf(&b, ", %s for %s", m, fmtDur(p.Length))
	} else if p.Length > 0 {
		fmt.Fprintf(&b, ", for %s", fmtDur(p.Length))
	}
	if p.Delete != "" {
		fmt.Fprintf(&b, ", delete the %s", p.Delete)
	}
	if p.Notice > 0 {
		fmt.Fprintf(&b, ", Preempt with %s notice", fmtDur(p.Notice))
	}
	if p.Grandchildren > 0 {
		fmt.Fprintf(&b, ", %d grandchildren", p.Grandchildren)
	}
	if p.Escape != "" {
		fmt.Fprintf(&b, " escaping by %s, then %s", p.Escape, p.Stop)
	}
	if p.IgnoreTerm {
		b.WriteString(", SIGTERM ignored")
	}
	if p.Deputy != "" {
		fmt.Fprintf(&b, ", the deputy's %s at SIGTERM%+.2fs", p.Deputy, p.Around.Seconds())
	}
	return b.String()
}

func modeString(m faultproxy.Mode) string {
	var parts []string
	switch {
	case m.Reset:
		parts = append(parts, "reset")
	case m.BlackHole:
		parts = append(parts, "black hole")
	}
	if m.Latency > 0 {
		parts = append(parts, "latency "+fmtDur(m.Latency))
	}
	if m.ErrorRate > 0 {
		status := m.ErrorStatus
		if status == 0 {
			status = 503
		}
		parts = append(parts, fmt.Sprintf("%d×%d%%", status, int(m.ErrorRate*100+0.5)))
	}
	if th := m.Throttle; th.Rate > 0 {
		answer := "503 ServerBusy"
		if th.Status == 500 {
			answer = "500 " + th.Code
		}
		parts = append(parts, fmt.Sprintf("throttled to one request per %s (%s)", fmtDur(time.Duration(float64(time.Second)/th.Rate)), answer))
	}
	if la := m.LoseAnswer; la.Op != "" {
		answer := "dropped"
		if la.Status != 0 {
			answer = strings.TrimSpace(fmt.Sprintf("%d %s", la.Status, la.Code))
		}
		which := "every"
		if la.Count > 0 {
			which = fmt.Sprintf("the first %d", la.Count)
		}
		parts = append(parts, fmt.Sprintf("%s %s answer lost (%s)", which, la.Op, answer))
	}
	return strings.Join(parts, " + ")
}

// Typical returns fixed, middle-of-the-range parameters: the CI version runs
// each scenario once with these.
func (k Kind) Typical() Params {
	p := Params{Warmup: 1500 * time.Millisecond, Grandchildren: 1}
	switch k {
	case BlackHole:
		p.Mode, p.Length = faultproxy.Mode{BlackHole: true}, 12*time.Second
	case Reset:
		p.Mode, p.Length = faultproxy.Mode{Reset: true}, 12*time.Second
	case FlakyShort:
		// Crosses the renewal at t_ok+5s: it fails and is retried; every
		// try waits 500 ms first.
		p.Offset, p.Length = 3*time.Second, 2500*time.Millisecond
		p.Mode = faultproxy.Mode{Latency: 500 * time.Millisecond, ErrorRate: 1, ErrorStatus: 503}
	case FlakyLong:
		// Longer than the renew request's own deadline (3 s): every
		// renewal times out.
		p.Mode, p.Length = faultproxy.Mode{Latency: 4 * time.Second}, 14*time.Second
	case Stubborn:
		p.Mode, p.Length = faultproxy.Mode{BlackHole: true}, 16*time.Second
		p.Grandchildren, p.IgnoreTerm = 2, true
	case Freeze:
		p.Length = 20 * time.Second
	case StorageLoss:
		p.Delete = "container"
	case Eviction:
		p.Notice = evictionNotice
	case Throttle:
		p.Mode, p.Length = faultproxy.Mode{Throttle: faultproxy.Throttle{Rate: 0.1, Burst: 1}}, 15*time.Second
	case LostAnswer:
		p.Mode, p.Length = faultproxy.Mode{LoseAnswer: faultproxy.LoseAnswer{Op: faultproxy.OpRenew, Status: 500, Code: "OperationTimedOut"}}, 12*time.Second
	case Escape:
		// The hardest of the nine: orphans, deaf to SIGTERM, when
		// leaderrun dies.
		p.Grandchildren, p.IgnoreTerm, p.Escape, p.Stop = 2, true, "double-fork", "kill9"
	case Deputy:
		// Killed as it takes over: after its poll found the lease free,
		// most of the time.
		p.Deputy, p.Around = "kill9", 150*time.Millisecond
	}
	return p
}

// The Escape scenario's variants: how the grandchildren leave, how the run
// ends.
var (
	escapeWays  = []string{"timeout", "setsid", "double-fork"}
	escapeStops = []string{"lost", "sigterm", "kill9"}
)

// evictionNotice is the notice Azure gives a Spot VM before evicting it.
const evictionNotice = 30 * time.Second

// Random draws a trial's parameters: the fault's phase in the renew cycle,
// its length and its variant.
//
// FlakyShort faults start Offset (0.5–4.5 s) after a lease request was seen
// at the proxy, t_ok, and end between t_ok+5.3s and t_ok+5.8s: they cover
// the renewal sent at t_ok+5s, which fails (or is slow) and is retried, and
// end early enough that a retry succeeds before the stop deadline,
// t_ok+8.5s, whatever the backoff's jitter (the third retry comes at most
// 1.7 s after the first failure). Any such fault must leave leadership
// undisturbed. FlakyLong faults last 10–20 s from a random phase: longer
// than the 8.5 s that can separate a fault's start from the stop deadline,
// so leadership must be lost.
func (k Kind) Random(rng *rand.Rand) Params {
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	statuses := []int{500, 503, 429}
	p := Params{Warmup: between(500*time.Millisecond, 6*time.Second), Grandchildren: 1}
	switch k {
	case BlackHole:
		p.Mode, p.Length = faultproxy.Mode{BlackHole: true}, between(10*time.Second, 20*time.Second)
	case Reset:
		p.Mode, p.Length = faultproxy.Mode{Reset: true}, between(10*time.Second, 20*time.Second)
	case FlakyShort:
		p.Warmup = between(200*time.Millisecond, 2*time.Second)
		p.Offset = between(500*time.Millisecond, 4500*time.Millisecond)
		p.Length = between(5300*time.Millisecond, 5800*time.Millisecond) - p.Offset
		switch rng.IntN(3) {
		case 0: // an error burst
			p.Mode = faultproxy.Mode{ErrorRate: []float64{0.5, 1}[rng.IntN(2)], ErrorStatus: statuses[rng.IntN(3)]}
		case 1: // a latency spike, within the renew request's 3 s deadline
			p.Mode = faultproxy.Mode{Latency: between(500*time.Millisecond, 2500*time.Millisecond)}
		default: // slow and failing
			p.Mode = faultproxy.Mode{Latency: between(300*time.Millisecond, 800*time.Millisecond),
				ErrorRate: 1, ErrorStatus: statuses[rng.IntN(3)]}
		}
	case FlakyLong:
		p.Length = between(10*time.Second, 20*time.Second)
		switch rng.IntN(3) {
		case 0:
			p.Mode = faultproxy.Mode{ErrorRate: 1, ErrorStatus: statuses[rng.IntN(3)]}
		case 1: // past the renew request's 3 s deadline
			p.Mode = faultproxy.Mode{Latency: between(3500*time.Millisecond, 6*time.Second)}
		default:
			p.Mode = faultproxy.Mode{Latency: between(time.Second, 2*time.Second), ErrorRate: 1, ErrorStatus: statuses[rng.IntN(3)]}
		}
	case Kill9:
		p.Grandchildren = 1 + rng.IntN(2)
	case Stubborn:
		p.Mode, p.Length = faultproxy.Mode{BlackHole: true}, between(15*time.Second, 20*time.Second)
		p.Grandchildren, p.IgnoreTerm = 1+rng.IntN(3), true
	case Freeze:
		p.Length = between(16*time.Second, 25*time.Second)
	case StorageLoss:
		p.Delete = []string{"container", "blob"}[rng.IntN(2)]
	case Eviction:
		// At a random moment of the renew cycle (Warmup); one child in
		// three ignores the stop signal and is killed after the grace.
		p.Notice = evictionNotice
		p.IgnoreTerm = rng.IntN(3) == 0
	case Throttle:
		// A token every 2–20 s, the bucket holding one: a renewal and its
		// retries get through only now and then. As the service answers
		// past its target: 503 ServerBusy, or 500 OperationTimedOut.
		th := faultproxy.Throttle{Rate: 1 / between(2*time.Second, 20*time.Second).Seconds(), Burst: 1}
		if rng.IntN(2) == 0 {
			th.Status, th.Code = 500, "OperationTimedOut"
		}
		p.Mode, p.Length = faultproxy.Mode{Throttle: th}, between(5*time.Second, 20*time.Second)
	case LostAnswer:
		// Every renewal lands, its answer lost (a 500 or a dropped
		// connection), or only the first one or two.
		la := faultproxy.LoseAnswer{Op: faultproxy.OpRenew, Status: []int{500, 0}[rng.IntN(2)], Count: rng.IntN(3)}
		if la.Status == 500 && rng.IntN(2) == 0 {
			la.Code = "OperationTimedOut"
		}
		p.IgnoreTerm = rng.IntN(3) == 0
		p.Mode, p.Length = faultproxy.Mode{LoseAnswer: la}, between(5*time.Second, 20*time.Second)
	case Escape:
		// Every way out with every way to end, one child in two deaf to
		// SIGTERM (SIGKILL must then reach the escapees).
		p.Grandchildren = 1 + rng.IntN(2)
		p.Escape, p.Stop = escapeWays[rng.IntN(len(escapeWays))], escapeStops[rng.IntN(len(escapeStops))]
		p.IgnoreTerm = rng.IntN(2) == 0
		if p.Stop == "lost" {
			p.Mode, p.Length = faultproxy.Mode{BlackHole: true}, between(15*time.Second, 20*time.Second)
		}
	case Deputy:
		p = randomDeputy(rng, between)
	}
	return p
}
