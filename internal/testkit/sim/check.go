package sim

// check.go: the invariants, checked at every step (every request the
// service applies, every launch and death of a COMMAND), and once the
// world has ended (nothing lost).

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/schedule"
)

// takeBackWarning is in the warning leaderrun logs when it could not take
// back a claim whose COMMAND never started: history may then show a run
// that never happened, and says so, naming the claim's term.
const takeBackWarning = "could not be taken back"

var (
	termField = regexp.MustCompile(`\bterm=(\d+)`)
	slotField = regexp.MustCompile(`\bslot=(\d+)`)
)

// brokenOrTaken is in the warning of a slot given up because its lease was
// broken or taken (lease/slots.go).
const brokenOrTaken = "its lease broken or taken"

type claimRec struct {
	blob string
	term int64
}

type checker struct {
	w *world

	mu         sync.Mutex
	violations []string
	running    map[string][]*child         // by blob
	byTerm     map[string]map[int64]*child // by blob, term
	launches   []*child                    // in order
	invs       []*invocation               // every invocation, in the order they began
	maxTerm    map[string]int64            // by blob: the highest term written
	lastClaim  map[string]string           // by blob: the nonce of the latest claim written
	claims     map[string][]claimRec       // by identity
	claimedAt  []time.Time                 // when each claim was written, in order

	// Triggers: each written (by nonce: when), the claims that consumed
	// one (by blob, term), and the COMMAND that ran each.
	triggers   map[string]time.Duration
	consumed   map[claimRec]string
	triggerRan map[string]*child
	// The exit status each term's run recorded (by blob, term), and the
	// claims whose invocation died, froze or said it could not take them
	// back (excused from nothing lost).
	recorded map[claimRec]int
	excused  map[claimRec]bool
}

func newChecker(w *world) *checker {
	return &checker{w: w, running: map[string][]*child{}, byTerm: map[string]map[int64]*child{},
		maxTerm: map[string]int64{}, lastClaim: map[string]string{}, claims: map[string][]claimRec{},
		triggers: map[string]time.Duration{}, consumed: map[claimRec]string{}, triggerRan: map[string]*child{},
		recorded: map[claimRec]int{}, excused: map[claimRec]bool{}}
}

func (k *checker) add(msg string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.violations = append(k.violations, msg)
}

func (k *checker) failed() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.violations)
}

// stopBudget is the lease's: KillGrace capped at a third of the duration.
func (k *checker) stopBudget() time.Duration {
	return min(k.w.plan.KillGrace, k.w.plan.LeaseDuration/3)
}

// launched is a COMMAND's start.
func (k *checker) launched(c *child) {
	w := k.w
	c.inv.mu.Lock()
	c.inv.kids = append(c.inv.kids, c)
	c.inv.mu.Unlock()
	blob, term, id := c.blob(), c.term(), c.env["LEADERRUN_LEASE_ID"]
	w.tracef("%s: launched %s (lease ID %s, kill deadline in %s%s)", c.inv.id, c, w.label(id),
		time.Until(c.deadline).Round(time.Millisecond), occText(c))
	if left := time.Until(c.deadline); left < k.stopBudget() {
		w.violate("%s started %s before its kill deadline: past its lease's stop deadline (stop budget %s)", c, left, k.stopBudget())
	}
	if !w.svc.HeldThroughout(container, blob, id, c.at, c.at) {
		w.violate("%s started on a lease its lease ID does not hold at the service", c)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byTerm[blob] == nil {
		k.byTerm[blob] = map[int64]*child{}
	}
	if o, ok := k.byTerm[blob][term]; ok {
		k.violations = append(k.violations, fmt.Sprintf("%s runs under the term of %s", c, o))
		w.tracef("VIOLATION: two COMMANDs under term %d of %s", term, blob)
	}
	k.byTerm[blob][term] = c
	k.launches = append(k.launches, c)
	k.running[blob] = append(k.running[blob], c)
	n := 0
	for _, cs := range k.running {
		n += len(cs)
	}
	if n > w.plan.Slots {
		msg := fmt.Sprintf("%d COMMANDs run at once on a lease of %d slots, since %s started", n, w.plan.Slots, c)
		k.violations = append(k.violations, msg)
		w.tracef("VIOLATION: %s", msg)
	}
	if len(k.running[blob]) > 1 {
		msg := fmt.Sprintf("two COMMANDs run on %s at once: %s and %s", blob, k.running[blob][0], c)
		k.violations = append(k.violations, msg)
		w.tracef("VIOLATION: %s", msg)
	}
	k.launchedForWhy(c)
}

// launchedForWhy checks why c runs: a manual run is the run of a trigger
// its claim consumed, and no trigger runs twice; a retry comes after a
// failure, after the delay, within --retries.
func (k *checker) launchedForWhy(c *child) {
	w := k.w
	switch c.env["LEADERRUN_TRIGGER"] {
	case lease.TriggerManual:
		nonce := k.consumed[claimRec{c.blob(), c.term()}]
		switch o := k.triggerRan[nonce]; {
		case nonce == "":
			k.violations = append(k.violations, fmt.Sprintf("%s runs as manual, but its claim consumed no trigger", c))
		case o != nil:
			msg := fmt.Sprintf("the trigger %s ran twice: %s and %s", w.label(nonce), o, c)
			k.violations = append(k.violations, msg)
			w.tracef("VIOLATION: %s", msg)
		default:
			k.triggerRan[nonce] = c
		}
	case lease.TriggerSchedule, lease.TriggerRetry:
		// An attempt whose claim stood but whose COMMAND never started
		// (its host killed, its take-back failed) counts too: attempts go
		// up, at most to --retries + 1.
		occ := c.env["LEADERRUN_OCCURRENCE"]
		attempt, _ := strconv.Atoi(c.env["LEADERRUN_ATTEMPT"])
		var prev *child
		n := 0
		for _, o := range k.launches {
			if o != c && o.env["LEADERRUN_OCCURRENCE"] == occ && o.env["LEADERRUN_TRIGGER"] != lease.TriggerManual {
				prev, n = o, n+1
			}
		}
		violate := func(format string, args ...any) {
			msg := fmt.Sprintf(format, args...)
			k.violations = append(k.violations, msg)
			w.tracef("VIOLATION: %s", msg)
		}
		if n > w.plan.Retries || attempt > w.plan.Retries+1 || attempt < n+1 {
			violate("%s runs attempt %d of %s, its %d run: a failed attempt is retried at most %d times", c, attempt, occ, n+1, w.plan.Retries)
		}
		if prev == nil {
			return
		}
		if pa, _ := strconv.Atoi(prev.env["LEADERRUN_ATTEMPT"]); attempt <= pa {
			violate("%s runs attempt %d of %s after attempt %d", c, attempt, occ, pa)
		}
		if code, ok := k.recorded[claimRec{prev.blob(), prev.term()}]; ok && code == 0 {
			violate("%s retries %s, whose run recorded status 0", c, occ)
		}
		if !prev.diedAt.IsZero() && c.at.Before(prev.diedAt.Add(w.plan.RetryDelay-time.Second)) {
			violate("%s retries %s %s after its attempt ended, before --retry-delay %s", c, occ, c.at.Sub(prev.diedAt), w.plan.RetryDelay)
		}
		if prev.diedAt.IsZero() {
			violate("%s retries %s while its attempt still runs", c, occ)
		}
	}
}

// maxRunFor is the longest a COMMAND may run under --max-runtime: the max
// runtime, the grace after the stop signal, and SIGKILL's latency (the
// fake's killTake is under 300 ms); 0: no limit. It holds for a frozen
// leaderrun too: the guard's kill deadline covers the max runtime.
func (k *checker) maxRunFor() time.Duration {
	if k.w.plan.MaxRuntime == 0 {
		return 0
	}
	return k.w.plan.MaxRuntime + k.w.plan.KillGrace + 300*time.Millisecond
}

// died is a COMMAND's confirmed death.
func (k *checker) died(c *child) {
	w := k.w
	w.tracef("%s: %s died (%s, ran %s)", c.inv.id, c, resultText(c), c.diedAt.Sub(c.at).Round(time.Millisecond))
	if !w.svc.HeldThroughout(container, c.blob(), c.env["LEADERRUN_LEASE_ID"], c.at, c.diedAt) {
		w.violate("%s outlived its lease at the service", c)
	}
	if most := k.maxRunFor(); most > 0 && c.diedAt.Sub(c.at) > most {
		w.violate("%s ran %s, past --max-runtime %s, the grace and SIGKILL's latency", c, c.diedAt.Sub(c.at), w.plan.MaxRuntime)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.running[c.blob()] = slices.DeleteFunc(k.running[c.blob()], func(o *child) bool { return o == c })
}

// applied is the service's every step: every running COMMAND must still
// hold its lease; the terms written only go up.
func (k *checker) applied(a blobsim.Applied) {
	w := k.w
	w.tracef("svc %s %s %s -> %d %s%s", a.Client, a.Op, a.Blob, a.Status, a.Code, w.appliedText(a))
	if a.Op == blobsim.OpPutBlob && a.Status/100 == 2 && a.Blob == lease.TriggerBlob(leaseName) {
		k.mu.Lock()
		if n := a.Metadata["nonce"]; n != "" {
			if _, ok := k.triggers[n]; !ok {
				k.triggers[n] = a.Time.Sub(w.start)
			}
		}
		k.mu.Unlock()
	}
	k.mu.Lock()
	var running []*child
	for _, cs := range k.running {
		running = append(running, cs...)
	}
	k.mu.Unlock()
	now := time.Now()
	for _, c := range running {
		if !w.svc.HeldThroughout(container, c.blob(), c.env["LEADERRUN_LEASE_ID"], c.at, now) {
			w.violate("%s runs on after its lease ended at the service", c)
		}
		if most := k.maxRunFor(); most > 0 && now.Sub(c.at) > most {
			w.violate("%s runs on %s after its start, past --max-runtime %s, the grace and SIGKILL's latency", c, now.Sub(c.at), w.plan.MaxRuntime)
		}
	}
	if a.Op != "setMetadata" || a.Status/100 != 2 {
		return
	}
	if bn := lease.ParseBlobName(a.Blob); bn.Kind != lease.KindSlot {
		return
	}
	term, err := strconv.ParseInt(a.Metadata["term"], 10, 64)
	if err != nil {
		w.violate("a metadata write on %s without a term: %q", a.Blob, a.Metadata["term"])
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	prev, claim := k.maxTerm[a.Blob], a.Metadata["claim"]
	switch {
	case term < prev:
		k.violations = append(k.violations, fmt.Sprintf("the term of %s went down from %d to %d", a.Blob, prev, term))
		w.tracef("VIOLATION: the term of %s went down", a.Blob)
	case claim != "" && claim != k.lastClaim[a.Blob] && term <= prev: // a claim taken back drops its nonce: no new claim
		k.violations = append(k.violations, fmt.Sprintf("a new claim on %s kept term %d", a.Blob, term))
		w.tracef("VIOLATION: a new claim on %s kept term %d", a.Blob, term)
	}
	if term > prev {
		k.claims[a.Metadata["holder"]] = append(k.claims[a.Metadata["holder"]], claimRec{a.Blob, term})
		k.claimedAt = append(k.claimedAt, a.Time)
		if t, nonce, ok := strings.Cut(a.Metadata["triggered"], ","); ok && t == a.Metadata["term"] {
			k.consumed[claimRec{a.Blob, term}] = nonce
		}
	}
	if t, err := strconv.ParseInt(a.Metadata["lastrunterm"], 10, 64); err == nil {
		if code, err := strconv.Atoi(a.Metadata["lastexit"]); err == nil {
			k.recorded[claimRec{a.Blob, t}] = code
		}
	}
	k.maxTerm[a.Blob] = max(prev, term)
	k.lastClaim[a.Blob] = claim
}

// warned is a WARN or ERROR line of inv's. One that says a slot's lease
// was broken or taken must be true at that moment: a slot still leased by
// a lease ID of inv's, or whose lease of inv's lapsed with nobody leasing
// the blob since (its ID could renew it and take the claim back), makes it
// a lie. A warning that lies is no
// excuse for a phantom run; it is itself a violation.
func (k *checker) warned(inv *invocation, line string) {
	if strings.Contains(line, brokenOrTaken) {
		if m := slotField.FindStringSubmatch(line); m != nil {
			slot, _ := strconv.Atoi(m[1])
			blob := lease.SlotBlob(leaseName, slot)
			b, ok := k.w.svc.Blob(container, blob)
			inv.mu.Lock()
			ours := ok && b.State == blobsim.Leased && inv.leaseIDs[b.LeaseID]
			lapsed := ok && b.State == blobsim.Expired && inv.leaseIDs[b.LeaseID]
			inv.mu.Unlock()
			if ours || lapsed {
				k.w.violate("%s warns that the lease of %s was broken or taken, but the service shows it %s under its own lease ID: %s", inv.id, blob, b.State, line)
				return
			}
		}
	}
	inv.mu.Lock()
	inv.warned = append(inv.warned, line)
	inv.mu.Unlock()
}

// ended is an invocation's exit: a claim of its that the blob still
// records as a run must have been launched, unless it was killed, or said,
// naming the term and truly (warned), that it could not take the claim
// back (no phantom run).
func (k *checker) ended(inv *invocation) {
	w := k.w
	inv.mu.Lock()
	excused := inv.dead
	warnedTerms := map[int64]bool{} // the terms leaderrun said it could not take back
	for _, l := range inv.warned {
		if containsWord(l, takeBackWarning) {
			if m := termField.FindStringSubmatch(l); m != nil {
				t, _ := strconv.ParseInt(m[1], 10, 64)
				warnedTerms[t] = true
			}
		}
	}
	inv.mu.Unlock()
	k.mu.Lock()
	claims := k.claims[inv.id]
	var unlaunched []claimRec
	for _, c := range claims {
		if o, ok := k.byTerm[c.blob][c.term]; !ok || o.inv != inv {
			unlaunched = append(unlaunched, c)
		}
	}
	for _, c := range unlaunched {
		if excused || warnedTerms[c.term] {
			k.excused[c] = true
		}
	}
	k.mu.Unlock()
	if excused {
		return
	}
	for _, c := range unlaunched {
		if warnedTerms[c.term] {
			continue
		}
		b, ok := w.svc.Blob(container, c.blob)
		if !ok {
			continue
		}
		for _, r := range lease.ReadHistory(b.Metadata, false) {
			if r.Term == c.term && r.Holder == inv.id {
				w.violate("phantom run: %s records a run of term %d by %s, which never started it and exited %d saying nothing",
					c.blob, c.term, inv.id, inv.exit)
			}
		}
	}
}

// final checks, once every invocation has ended, that nothing was lost in
// the quiet phase.
func (k *checker) final() {
	w, p := k.w, k.w.plan
	from, to := p.quietFrom(), p.End
	k.mu.Lock()
	launches := slices.Clone(k.launches)
	k.mu.Unlock()
	k.triggersNotLost()
	at := func(c *child) time.Duration { return c.at.Sub(w.start) }
	diedAt := func(c *child) time.Duration {
		if c.diedAt.IsZero() {
			return to
		}
		return c.diedAt.Sub(w.start)
	}
	switch p.Mode {
	case ModeServe, ModeSlots:
		// Someone runs at every instant, but for a handover's gap, and
		// but while no host runs leaderrun for a reason of its own (each
		// restarts after its delay): from the first to start again.
		gap := p.PollInterval*6/5 + 5*time.Second
		downs, downAtEnd := k.fleetDowns()
		// owed is when the service was owed again, a launch at t coming:
		// the end of a time the whole fleet was down, begun before the
		// gap allowed after covered was over.
		owed := func(covered, t time.Duration) time.Duration {
			for again := true; again; {
				again = false
				for _, d := range downs {
					if d.from <= covered+gap && d.to > covered && d.to <= t {
						covered, again = d.to, true
					}
				}
			}
			return covered
		}
		covered := from
		for _, c := range launches {
			if at(c) > covered+gap && at(c) < to {
				covered = owed(covered, at(c))
			}
			if at(c) > covered+gap && at(c) < to {
				w.violate("nothing lost: nobody ran the service from %s to %s", covered, at(c))
				covered = at(c)
			}
			if at(c) <= covered+gap {
				covered = max(covered, diedAt(c))
			}
		}
		if covered = owed(covered, to); covered+gap < to && (downAtEnd < 0 || downAtEnd > covered+gap) {
			w.violate("nothing lost: nobody ran the service from %s to the end (%s)", covered, to)
		}
	case ModeOncePer:
		// A window begins at every run start recorded: a COMMAND's, or a
		// claim's whose COMMAND never started (its host killed, say): that
		// window is spent too, and the next run may wait for its end.
		slack := p.Cron + p.Splay + 5*time.Second
		due := from + slack
		for _, c := range launches {
			if at(c) < from {
				due = max(due, max(at(c)+p.OncePer, diedAt(c))+slack)
			}
		}
		k.mu.Lock()
		for _, t := range k.claimedAt {
			if t.Sub(w.start) < from {
				due = max(due, t.Sub(w.start)+p.OncePer+slack)
			}
		}
		k.mu.Unlock()
		// A tick whose claim was taken back because the guard failed to
		// start (exit 126; a reader between the claim and its take-back
		// skips for it) is one cron period more to wait.
		var failedGuards []time.Duration
		k.mu.Lock()
		for _, inv := range k.invs {
			inv.mu.Lock()
			if inv.ended && inv.exit == exit.NotExec {
				failedGuards = append(failedGuards, inv.endedAt.Sub(w.start))
			}
			inv.mu.Unlock()
		}
		k.mu.Unlock()
		for _, c := range launches {
			if at(c) < from {
				continue
			}
			for _, g := range failedGuards {
				if g > due-slack && g < at(c) && at(c) > due {
					due += p.Cron
				}
			}
			if at(c) > due {
				w.violate("nothing lost: a --once-per window went without a run from %s to %s", due-slack, at(c))
			}
			due = max(at(c)+p.OncePer, diedAt(c)) + slack
		}
		if due < to {
			w.violate("nothing lost: no run after %s (due by %s, the end at %s)", due-slack, due, to)
		}
	case ModeSchedule:
		s, err := schedule.Parse(p.Schedule)
		if err != nil {
			w.violate("schedule: %v", err)
			return
		}
		slack := p.Cron + p.Splay + 10*time.Second
		k.retriesNotLost(s, launches, slack)
		// An occurrence due before the lease blob was created is not run
		// (as a new CronJob does not run what was due before it existed):
		// the faults may have kept every host from creating it until the
		// quiet phase. Its creation time is told to the second.
		begin := w.start.Add(from - time.Nanosecond)
		if b, ok := w.svc.Blob(container, leaseName); ok {
			begin = later(begin, b.Created.Truncate(time.Second))
		}
		for occ := s.Next(begin); occ.Sub(w.start) < to-slack; occ = s.Next(occ) {
			next := s.Next(occ)
			ran, held := false, false
			for _, c := range launches {
				if c.env["LEADERRUN_OCCURRENCE"] == occ.UTC().Format(time.RFC3339) && c.env["LEADERRUN_TRIGGER"] != lease.TriggerManual {
					ran = true
				}
				if c.at.Before(occ) && diedAt(c) > next.Sub(w.start)-slack {
					held = true // an earlier run held the lease until the next one was due
				}
			}
			if !ran && !held {
				w.violate("nothing lost: the occurrence %s never ran", occ.UTC().Format(time.RFC3339))
			}
		}
	case ModeOnce:
		// A COMMAND completed with status 0 (recorded as the last success,
		// unless its leaderrun could not write it: another then runs).
		done := false
		for _, c := range launches {
			done = done || (c.res.Signal == 0 && c.res.ExitCode == 0 && !c.diedAt.IsZero())
		}
		if !done {
			w.violate("nothing lost: --once never completed a run with status 0")
		}
	case ModeOncePerHost:
		// Every host's COMMAND completed with status 0 (its done marker
		// then exists, unless leaderrun said it could not write it).
		for _, h := range w.hosts {
			done := false
			for _, c := range launches {
				done = done || (c.inv.h == h && c.res.Signal == 0 && c.res.ExitCode == 0 && !c.diedAt.IsZero())
			}
			if _, ok := w.svc.Blob(container, lease.DoneBlob(leaseName, h.name)); !ok && !done {
				w.violate("nothing lost: %s never completed its --once-per-host run", h.name)
			}
		}
	}
}

// triggersNotLost: every trigger written ran, unless the claim that
// consumed it is excused (its invocation died, froze, or said it could not
// take the claim back).
func (k *checker) triggersNotLost() {
	w := k.w
	k.mu.Lock()
	defer k.mu.Unlock()
	// A trigger is kept if it ran, or if its run's claim is excused (its
	// holder killed, say); or if one written after it was: the marker holds
	// one trigger, and a later one replaces it only once it was seen taken
	// (a claim that may yet be taken back), and one run after both answers
	// both.
	kept := func(nonce string) bool {
		if k.triggerRan[nonce] != nil {
			return true
		}
		for c, n := range k.consumed {
			if n == nonce && k.excused[c] {
				return true
			}
		}
		return false
	}
	for _, nonce := range slices.Sorted(maps.Keys(k.triggers)) {
		excused := false
		for later, at := range k.triggers {
			excused = excused || (at >= k.triggers[nonce] && kept(later))
		}
		if !excused {
			msg := fmt.Sprintf("nothing lost: the trigger %s written at %s never ran", w.label(nonce), k.triggers[nonce].Round(time.Millisecond))
			k.violations = append(k.violations, msg)
			w.tracef("VIOLATION: %s", msg)
		}
	}
}

// retriesNotLost: in the quiet phase, an attempt that failed with retries
// left is retried, unless the next occurrence comes first: by its end plus
// the delay, a lease's duration (a holder found gone), a cron period and
// slack.
func (k *checker) retriesNotLost(s *schedule.Schedule, launches []*child, slack time.Duration) {
	w, p := k.w, k.w.plan
	if p.Retries == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, c := range launches {
		why := c.env["LEADERRUN_TRIGGER"]
		if why == lease.TriggerManual || why == "" || c.diedAt.IsZero() || c.at.Sub(w.start) < p.quietFrom() {
			continue
		}
		code, recorded := k.recorded[claimRec{c.blob(), c.term()}]
		attempt, _ := strconv.Atoi(c.env["LEADERRUN_ATTEMPT"])
		if (recorded && code == 0) || attempt > p.Retries {
			continue
		}
		occ, _ := time.Parse(time.RFC3339, c.env["LEADERRUN_OCCURRENCE"])
		due := c.diedAt.Add(p.RetryDelay + p.LeaseDuration + 2*slack)
		if !due.Before(s.Next(occ)) || due.Sub(w.start) >= p.End {
			continue
		}
		retried := false
		for _, o := range launches[i+1:] {
			retried = retried || (o.env["LEADERRUN_OCCURRENCE"] == c.env["LEADERRUN_OCCURRENCE"] && o.env["LEADERRUN_TRIGGER"] == lease.TriggerRetry)
		}
		if !retried {
			msg := fmt.Sprintf("nothing lost: attempt %d of %s failed (%s) and was never retried", attempt, c.env["LEADERRUN_OCCURRENCE"], resultText(c))
			k.violations = append(k.violations, msg)
			w.tracef("VIOLATION: %s", msg)
		}
	}
}

// began records an invocation as it starts.
func (k *checker) began(inv *invocation) {
	k.mu.Lock()
	k.invs = append(k.invs, inv)
	k.mu.Unlock()
}

// span is a time of the world, from its start.
type span struct{ from, to time.Duration }

// fleetDowns is when every host was down at once: each host down from an
// exit of its own (a COMMAND that ended, a guard that failed: exit 126, or
// killed) until its next invocation starts. An exit that is not such
// (leaderrun gave up waiting, say) keeps its host up: the service is still
// owed. downAtEnd is when the fleet went down for the last time and
// stayed down to the end, or -1. One invocation at a time per host, as in
// the modes that run a service.
func (k *checker) fleetDowns() (downs []span, downAtEnd time.Duration) {
	w := k.w
	k.mu.Lock()
	invs := slices.Clone(k.invs)
	k.mu.Unlock()
	byHost := map[*host][]*invocation{}
	for _, inv := range invs {
		byHost[inv.h] = append(byHost[inv.h], inv)
	}
	type edge struct {
		at   time.Duration
		down int // +1 a host goes down, -1 it comes up
	}
	var edges []edge
	for _, list := range byHost {
		for i, inv := range list {
			inv.mu.Lock()
			own := inv.ended && (inv.dead || len(inv.kids) > 0 || inv.exit == exit.NotExec)
			end := inv.endedAt.Sub(w.start)
			inv.mu.Unlock()
			if !own {
				continue
			}
			edges = append(edges, edge{end, +1})
			if i+1 < len(list) {
				edges = append(edges, edge{list[i+1].began.Sub(w.start), -1})
			}
		}
	}
	// At the same instant, a host comes up before another goes down: the
	// fleet was not down.
	slices.SortStableFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.down, b.down)) })
	n, hosts := 0, len(w.hosts)
	downAtEnd = -1
	for _, e := range edges {
		if e.down < 0 && n == hosts {
			downs = append(downs, span{downAtEnd, e.at})
			downAtEnd = -1
		}
		n += e.down
		if n == hosts && e.down > 0 {
			downAtEnd = e.at
		}
	}
	return downs, downAtEnd
}

// quietFrom is when the quiet phase is checked from: the faults' end plus
// time for frozen hosts to thaw and dead holders' leases to lapse.
func (p Plan) quietFrom() time.Duration { return p.FaultEnd + 2*p.LeaseDuration + 10*time.Second }

func resultText(c *child) string {
	if c.res.Signal != 0 {
		return "killed by " + unix.SignalName(c.res.Signal)
	}
	return "exit " + strconv.Itoa(c.res.ExitCode)
}

func occText(c *child) string {
	if o := c.env["LEADERRUN_OCCURRENCE"]; o != "" {
		return ", occurrence " + o
	}
	return ""
}

// label names a lease ID or nonce in the trace by the order it first
// appeared in (id1, id2, …): random values would make two traces of one
// seed differ.
func (w *world) label(id string) string {
	if id == "" {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.labels == nil {
		w.labels = map[string]string{}
	}
	l, ok := w.labels[id]
	if !ok {
		l = fmt.Sprintf("id%d", len(w.labels)+1)
		w.labels[id] = l
	}
	return l
}

func containsWord(s, w string) bool { return strings.Contains(s, w) }

// appliedText is what a trace line says of an applied request beyond its
// status: the lease ID it carried, and a claim's term and holder.
func (w *world) appliedText(a blobsim.Applied) string {
	s := ""
	if id := cmpOr(a.ProposedID, a.LeaseID); id != "" {
		s += " lease=" + w.label(id)
	}
	if a.Op == "setMetadata" && a.Status/100 == 2 {
		s += fmt.Sprintf(" term=%s holder=%s claim=%s run=%s/%s", a.Metadata["term"], a.Metadata["holder"],
			w.label(a.Metadata["claim"]), a.Metadata["lastrunterm"], a.Metadata["lastrunholder"])
		if o := a.Metadata["occurrence"]; o != "" {
			s += " occurrence=" + o + " attempt=" + cmpOr(a.Metadata["attempt"], "1")
		}
		if t, n, ok := strings.Cut(a.Metadata["triggered"], ","); ok {
			s += " triggered=" + t + "/" + w.label(n)
		}
		if l := a.Metadata["lostat"]; l != "" {
			s += " lostat=" + l
		}
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
