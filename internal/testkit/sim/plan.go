package sim

// plan.go: what a seed draws before the world runs: the mode, the hosts and
// their flags, the faults' rates and windows, and the timed events.

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Mode is the kind of line every host of the fleet runs.
type Mode int

const (
	// ModeServe: a service under systemd (wait for ever, a long COMMAND,
	// restarted when it ends).
	ModeServe Mode = iota
	// ModeSlots: the same with --slots N.
	ModeSlots
	// ModeOncePer: a cron line every minute, --no-wait --once-per W -E 0.
	ModeOncePer
	// ModeSchedule: a cron line every minute, --schedule.
	ModeSchedule
	// ModeOnce: a deploy step on every host, --once -w 10m.
	ModeOnce
	// ModeOncePerHost: a rolling patch, --slots N --once-per-host.
	ModeOncePerHost
	modes
)

func (m Mode) String() string {
	return [...]string{"serve", "slots", "once-per", "schedule", "once", "once-per-host"}[m]
}

// cron reports whether the mode's hosts invoke leaderrun from cron.
func (m Mode) cron() bool { return m == ModeOncePer || m == ModeSchedule }

// Plan is everything a seed draws before the world runs.
type Plan struct {
	Seed  uint64
	Mode  Mode
	Hosts int
	Slots int // --slots; 1 for most modes

	LeaseDuration  time.Duration
	KillGrace      time.Duration
	PollInterval   time.Duration
	StorageTimeout time.Duration
	OncePer        time.Duration // ModeOncePer's window
	Schedule       string        // ModeSchedule's schedule
	Period         time.Duration // ModeSchedule: the schedule's period
	Cron           time.Duration // how often a cron line runs
	Splay          time.Duration // a cron line's --splay
	MaxRuntime     time.Duration // a cron line's --max-runtime, for some seeds; 0: none
	Retries        int           // ModeSchedule: --retries (0 for most seeds)
	RetryDelay     time.Duration // and --retry-delay

	// DeputyPoll is every host's --deputy-poll-interval (0: no deputy);
	// Unready, by host, the spans of the first phase in which its
	// --ready-cmd fails (nil: the host has none).
	DeputyPoll time.Duration
	Unready    map[int][]Window

	FaultEnd time.Duration // faults, signals, kills, freezes and operator actions end here
	End      time.Duration // the world ends here
	Faults   FaultRates
	Events   []Event // sorted by At
}

// FaultRates are the chances a request meets a fault in the first phase.
type FaultRates struct {
	Lose    float64 // a write applied, its answer lost
	Refuse  float64 // 503, 500 or a reset, not applied
	Slow    float64 // a delay up to the lease duration
	Bursts  []Window
	Cutoffs []Cutoff
}

// Window is a span of the first phase in which every request is refused
// (a 503 burst).
type Window struct{ From, To time.Duration }

// Cutoff is a span in which one host cannot reach the service: its
// requests fail at once (Refused) or hang until their deadline.
type Cutoff struct {
	Host     int
	From, To time.Duration
	Hang     bool
}

// EventKind is what happens at an Event.
type EventKind int

const (
	EvSigterm EventKind = iota // SIGTERM to a host's leaderrun
	EvSigint                   // SIGINT, sometimes twice
	EvKill                     // kill -9 of a host's leaderrun
	EvFreeze                   // SIGSTOP of a host's leaderrun, for Dur
	EvBreak                    // leaderrun break (safe)
	EvPause                    // leaderrun pause, for Dur (0: until resume)
	EvResume                   // leaderrun resume
	EvDrain                    // leaderrun pause --drain
	// Aimed at the claim: armed at the event's time, it happens to the
	// host's leaderrun while its next claim's write is in flight (or its
	// lost answer read back): the narrowest window of the run flow.
	EvSigtermAtClaim
	EvKillAtClaim
	// Aimed at a run: armed at the event's time, it freezes the host's
	// leaderrun a while after its next COMMAND's launch, within the max
	// runtime, for Dur: only the guard can then stop COMMAND in time.
	EvFreezeAtLaunch
	EvTrigger // leaderrun trigger (cron modes)
)

func (k EventKind) String() string {
	return [...]string{"SIGTERM", "SIGINT", "kill -9", "freeze", "break", "pause", "resume", "drain", "SIGTERM at the claim", "kill -9 at the claim",
		"freeze at the launch", "trigger"}[k]
}

// Event is a timed event of the first phase.
type Event struct {
	At    time.Duration
	Kind  EventKind
	Host  int           // signals, kills, freezes
	Dur   time.Duration // freezes, pauses
	Twice bool          // EvSigint: a second SIGINT soon after
}

func (e Event) String() string {
	s := fmt.Sprintf("%s", e.Kind)
	switch e.Kind {
	case EvSigterm, EvSigint, EvKill, EvFreeze, EvSigtermAtClaim, EvKillAtClaim, EvFreezeAtLaunch:
		s += fmt.Sprintf(" host%d", e.Host)
	}
	if e.Dur > 0 {
		s += " for " + e.Dur.String()
	}
	if e.Twice {
		s += " twice"
	}
	return s
}

// NewPlan draws a plan from seed.
func NewPlan(seed uint64) Plan {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	p := Plan{Seed: seed, Mode: Mode(r.IntN(int(modes))), Hosts: 2 + r.IntN(4), Slots: 1}
	p.LeaseDuration = []time.Duration{15 * time.Second, 15 * time.Second, 20 * time.Second, 30 * time.Second}[r.IntN(4)]
	p.KillGrace = time.Duration(1+r.IntN(10)) * time.Second
	p.PollInterval = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 2 * time.Second}[r.IntN(4)]
	p.StorageTimeout = time.Duration(20+r.IntN(41)) * time.Second
	p.Cron = time.Minute
	p.FaultEnd = time.Duration(60+r.IntN(121)) * time.Second
	quiet := 90 * time.Second
	switch p.Mode {
	case ModeSlots, ModeOncePerHost:
		p.Slots = 2 + r.IntN(2)
		p.Hosts = max(p.Hosts, p.Slots+1)
	case ModeOncePer:
		p.OncePer = time.Duration(2+r.IntN(3)) * time.Minute
		p.Splay = time.Duration(r.IntN(20)) * time.Second
		quiet = 2*p.OncePer + 3*p.Cron
	case ModeSchedule:
		every := 2 + r.IntN(2)
		p.Schedule = fmt.Sprintf("*/%d * * * *", every)
		p.Period = time.Duration(every) * time.Minute
		p.Splay = time.Duration(r.IntN(20)) * time.Second
		quiet = 3*p.Period + 2*p.Cron
	case ModeOnce:
		quiet = 2 * time.Minute
	}
	p.End = p.quietFrom() + quiet

	// Faults: an intensity per seed, so that some seeds are calm and some
	// are storms.
	level := r.IntN(4)
	p.Faults.Lose = []float64{0, 0.03, 0.1, 0.25}[level]
	p.Faults.Refuse = []float64{0, 0.03, 0.08, 0.2}[r.IntN(4)]
	p.Faults.Slow = []float64{0, 0.01, 0.03, 0.08}[r.IntN(4)]
	for range r.IntN(3) {
		from := p.randAt(r)
		p.Faults.Bursts = append(p.Faults.Bursts, Window{from, min(from+time.Duration(1+r.IntN(15))*time.Second, p.FaultEnd)})
	}
	for range r.IntN(3) {
		from := p.randAt(r)
		p.Faults.Cutoffs = append(p.Faults.Cutoffs, Cutoff{Host: r.IntN(p.Hosts), From: from,
			To: min(from+time.Duration(1+r.IntN(30))*time.Second, p.FaultEnd), Hang: r.IntN(2) == 0})
	}

	// Events.
	for range r.IntN(4) {
		p.Events = append(p.Events, Event{At: p.randAt(r), Kind: EvSigterm, Host: r.IntN(p.Hosts)})
	}
	for range r.IntN(2) {
		p.Events = append(p.Events, Event{At: p.randAt(r), Kind: EvSigint, Host: r.IntN(p.Hosts), Twice: r.IntN(3) == 0})
	}
	for range r.IntN(3) {
		p.Events = append(p.Events, Event{At: p.randAt(r), Kind: EvKill, Host: r.IntN(p.Hosts)})
	}
	for range r.IntN(3) {
		d := time.Duration(1+r.IntN(int(2*p.LeaseDuration/time.Second))) * time.Second
		p.Events = append(p.Events, Event{At: p.randAt(r), Kind: EvFreeze, Host: r.IntN(p.Hosts), Dur: d})
	}
	for range r.IntN(3) {
		p.Events = append(p.Events, Event{At: p.randAt(r), Kind: EvSigtermAtClaim, Host: r.IntN(p.Hosts)})
	}
	for range r.IntN(2) {
		p.Events = append(p.Events, Event{At: p.randAt(r), Kind: EvKillAtClaim, Host: r.IntN(p.Hosts)})
	}
	for range r.IntN(2) {
		p.Events = append(p.Events, Event{At: p.randAt(r), Kind: EvBreak})
	}
	if r.IntN(3) == 0 {
		at := p.randAt(r)
		kind := EvPause
		if r.IntN(2) == 0 {
			kind = EvDrain
		}
		var dur time.Duration
		if r.IntN(2) == 0 {
			dur = time.Duration(5+r.IntN(30)) * time.Second
		}
		p.Events = append(p.Events, Event{At: at, Kind: kind, Dur: dur})
		// Resumed before the quiet phase, whatever the pause's own end.
		p.Events = append(p.Events, Event{At: at + time.Duration(1+r.IntN(40))*time.Second, Kind: EvResume})
	}
	// --max-runtime, on half the cron seeds, drawn from a stream of its
	// own: the draws above stay what they were for every seed. Half of
	// those freeze a holder's leaderrun past it, once. It is drawn to the
	// microsecond: COMMAND runs whole seconds, and a COMMAND that ends at
	// the very instant its max runtime is reached would leave the order of
	// the two to the Go scheduler, and a seed's replay would differ.
	if mr := stream(seed, "max-runtime"); p.Mode.cron() && mr.IntN(2) == 0 {
		p.MaxRuntime = time.Duration(5+mr.IntN(26))*time.Second + time.Duration(1+mr.IntN(999_999))*time.Microsecond
		if mr.IntN(2) == 0 {
			p.Events = append(p.Events, Event{At: p.randAt(mr), Kind: EvFreezeAtLaunch, Host: mr.IntN(p.Hosts),
				Dur: p.MaxRuntime + p.KillGrace + time.Duration(1+mr.IntN(20))*time.Second})
		}
	}
	// Drawn from streams of their own, so that the draws above, and so
	// every older seed's world, stay as they were.
	if p.Mode == ModeSchedule {
		rr := stream(seed, "retries")
		if rr.IntN(2) == 0 {
			p.Retries = 1 + rr.IntN(3)
			p.RetryDelay = []time.Duration{0, 20 * time.Second, time.Minute}[rr.IntN(3)]
		}
	}
	if p.Mode.cron() {
		tr := stream(seed, "triggers")
		for range tr.IntN(3) {
			p.Events = append(p.Events, Event{At: p.randAt(tr), Kind: EvTrigger})
		}
	}
	for i := range p.Events {
		p.Events[i].At = min(p.Events[i].At, p.FaultEnd)
	}
	slices.SortStableFunc(p.Events, func(a, b Event) int { return int(a.At - b.At) })
	p.drawStandby()
	return p
}

// drawStandby draws the deputy's poll interval and the hosts' readiness,
// from a stream of their own: the draws above stay those of the seeds
// before the deputy. In a waiting mode one seed in four has no deputy;
// one in three gives some hosts a --ready-cmd that fails in spans of the
// first phase (all ready in the quiet phase: nothing may be lost there).
func (p *Plan) drawStandby() {
	r := stream(p.Seed, "standby")
	p.DeputyPoll = []time.Duration{0, 250 * time.Millisecond, 250 * time.Millisecond, 100 * time.Millisecond}[r.IntN(4)]
	if r.IntN(3) != 0 {
		return
	}
	p.Unready = map[int][]Window{}
	for h := range p.Hosts {
		if r.IntN(2) == 0 {
			continue
		}
		p.Unready[h] = []Window{} // a --ready-cmd, ready throughout unless a span is drawn
		for range r.IntN(3) {
			from := p.randAt(r)
			p.Unready[h] = append(p.Unready[h], Window{from, min(from+time.Duration(1+r.IntN(40))*time.Second, p.FaultEnd)})
		}
	}
}

// ready reports whether host h's --ready-cmd succeeds at t.
func (p *Plan) ready(h int, t time.Duration) bool {
	for _, w := range p.Unready[h] {
		if t >= w.From && t < w.To {
			return false
		}
	}
	return true
}

// randAt is a random instant of the first phase, to the microsecond, so
// that no two drawn events fall on the same instant.
func (p *Plan) randAt(r *rand.Rand) time.Duration {
	return time.Duration(r.Int64N(int64(p.FaultEnd/time.Microsecond))) * time.Microsecond
}

// String is the plan in a few lines, for the trace's head.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: mode %s, %d hosts, slots %d, lease %s, grace %s, poll %s, storage timeout %s",
		p.Seed, p.Mode, p.Hosts, p.Slots, p.LeaseDuration, p.KillGrace, p.PollInterval, p.StorageTimeout)
	switch p.Mode {
	case ModeOncePer:
		fmt.Fprintf(&b, ", once-per %s, splay %s", p.OncePer, p.Splay)
	case ModeSchedule:
		fmt.Fprintf(&b, ", schedule %q, splay %s", p.Schedule, p.Splay)
		if p.Retries > 0 {
			fmt.Fprintf(&b, ", retries %d after %s", p.Retries, p.RetryDelay)
		}
	}
	if p.MaxRuntime > 0 {
		fmt.Fprintf(&b, ", max-runtime %s", p.MaxRuntime)
	}
	fmt.Fprintf(&b, "\nfaults until %s (lose %.2f, refuse %.2f, slow %.2f, %d bursts, %d cutoffs), end %s",
		p.FaultEnd, p.Faults.Lose, p.Faults.Refuse, p.Faults.Slow, len(p.Faults.Bursts), len(p.Faults.Cutoffs), p.End)
	fmt.Fprintf(&b, "\ndeputy poll %s", p.DeputyPoll)
	for h := range p.Hosts {
		if ws, ok := p.Unready[h]; ok {
			fmt.Fprintf(&b, "; host%d --ready-cmd, unready %v", h, ws)
		}
	}
	for _, e := range p.Events {
		fmt.Fprintf(&b, "\n  at %-12s %s", e.At.Round(time.Millisecond), e)
	}
	return b.String()
}

// stream is a random source for one purpose of one seed, named by parts:
// the same parts give the same draws, whatever else ran before.
func stream(seed uint64, parts ...any) *rand.Rand {
	h := fnv.New64a()
	for _, p := range parts {
		fmt.Fprint(h, p, "\x00")
	}
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}
