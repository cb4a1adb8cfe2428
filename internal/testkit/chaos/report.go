package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// fmtDur prints a duration in seconds with two decimals ("8.52s",
// "-0.01s"): the trials measure to about 10 ms.
func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Round(10*time.Millisecond).Seconds())
}

// Summary aggregates the trials of one scenario.
type Summary struct {
	Kind     Kind
	Trials   int // trials that ran (Err == nil)
	Errors   int // trials that could not be run
	Failed   int // trials with a failed expectation
	Overlaps int // trials in which two holders' processes ran at once

	MaxOverlap          time.Duration
	MedianOverlap       time.Duration // over the trials with an overlap
	MaxChildAfterFault  Span
	MaxAfterLastRenewal Span
	FailoverP50         Span
	FailoverP95         Span
	MinGap              Span
	MaxWakeToKill       Span           // Freeze
	MinBeforeNotBefore  Span           // Eviction
	MaxHandover         Span           // Eviction
	TermResets          int            // StorageLoss
	Kept                int            // Throttle, LostAnswer: trials in which the holder kept its leadership
	ByDeputy            int            // Deputy: trials in which the deputy took over first
	ByFault             map[string]int // Deputy: trials by the deputy's fault
	RenewFailures       int64
	MaxBeatGap          time.Duration
}

// Summarize groups results by scenario, in scenario order.
func Summarize(results []*Result) []Summary {
	by := map[Kind][]*Result{}
	for _, r := range results {
		by[r.Kind] = append(by[r.Kind], r)
	}
	var out []Summary
	for _, k := range Kinds() {
		rs := by[k]
		if len(rs) == 0 {
			continue
		}
		s := Summary{Kind: k}
		var failovers, overlaps []time.Duration
		for _, r := range rs {
			if r.Err != nil {
				s.Errors++
				continue
			}
			s.Trials++
			if r.Failed() {
				s.Failed++
			}
			if r.Overlap.D > 0 {
				s.Overlaps++
				overlaps = append(overlaps, r.Overlap.D)
				s.MaxOverlap = max(s.MaxOverlap, r.Overlap.D)
			}
			s.MaxChildAfterFault = maxSpan(s.MaxChildAfterFault, r.ChildAfterFault)
			s.MaxAfterLastRenewal = maxSpan(s.MaxAfterLastRenewal, r.AfterLastRenewal)
			s.MaxWakeToKill = maxSpan(s.MaxWakeToKill, r.WakeToKill)
			s.MaxHandover = maxSpan(s.MaxHandover, r.Handover)
			if b := r.BeforeNotBefore; b.OK && (!s.MinBeforeNotBefore.OK || b.D < s.MinBeforeNotBefore.D) {
				s.MinBeforeNotBefore = b
			}
			if r.Gap.OK && (!s.MinGap.OK || r.Gap.D < s.MinGap.D) {
				s.MinGap = r.Gap
			}
			if r.Failover.OK {
				failovers = append(failovers, r.Failover.D)
			}
			if r.TermReset {
				s.TermResets++
			}
			if (k == Throttle || k == LostAnswer) && !r.HolderExit.During {
				s.Kept++
			}
			if k == Deputy {
				if r.Successor == deputyID {
					s.ByDeputy++
				}
				if s.ByFault == nil {
					s.ByFault = map[string]int{}
				}
				s.ByFault[r.Params.Deputy]++
			}
			s.RenewFailures += r.RenewFailures
			s.MaxBeatGap = max(s.MaxBeatGap, r.MaxBeatGap)
		}
		s.FailoverP50 = percentile(failovers, 50)
		s.FailoverP95 = percentile(failovers, 95)
		if p := percentile(overlaps, 50); p.OK {
			s.MedianOverlap = p.D
		}
		out = append(out, s)
	}
	return out
}

func maxSpan(a, b Span) Span {
	if !b.OK || (a.OK && a.D >= b.D) {
		return a
	}
	return b
}

// percentile is the nearest-rank percentile; not OK for no values.
func percentile(ds []time.Duration, p int) Span {
	if len(ds) == 0 {
		return Span{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100 // ceil(p/100 · n)
	return span(s[max(rank, 1)-1])
}

// Table renders the summaries as a markdown table, followed by the notes
// that explain scenarios 8 and 9.
func Table(sums []Summary) string {
	var b strings.Builder
	b.WriteString("| # | scenario | trials | failed | overlaps | max child after fault | max child after last renewal | failover p50 | failover p95 | min gap | notes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range sums {
		trials := fmt.Sprint(s.Trials)
		if s.Errors > 0 {
			trials += fmt.Sprintf(" (+%d errors)", s.Errors)
		}
		overlaps := fmt.Sprint(s.Overlaps)
		fmt.Fprintf(&b, "| %d | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n",
			int(s.Kind), s.Kind, trials, s.Failed, overlaps, s.MaxChildAfterFault, s.MaxAfterLastRenewal,
			s.FailoverP50, s.FailoverP95, s.MinGap, s.notes())
	}
	return b.String()
}

func (s Summary) notes() string {
	var n []string
	switch s.Kind {
	case FlakyShort:
		n = append(n, fmt.Sprintf("survived %d/%d; %d renewals failed and were retried", s.Trials-s.Failed, s.Trials, s.RenewFailures))
	case Freeze:
		if s.Overlaps > 0 {
			n = append(n, "max overlap "+fmtDur(s.MaxOverlap))
		}
		n = append(n, "wake→kill max "+s.MaxWakeToKill.String())
	case Eviction:
		if s.Overlaps > 0 {
			n = append(n, "max overlap "+fmtDur(s.MaxOverlap))
		}
		n = append(n, "dead ≥ "+s.MinBeforeNotBefore.String()+" before NotBefore; release→successor max "+s.MaxHandover.String())
	case Escape:
		if s.Overlaps > 0 {
			n = append(n, "max overlap "+fmtDur(s.MaxOverlap))
		}
		n = append(n, "grandchildren out of the group: timeout(1), setsid, a double fork; then a lost lease, an outside SIGTERM or kill -9")
	case Throttle, LostAnswer:
		n = append(n, fmt.Sprintf("leadership kept %d/%d, lost in time %d/%d; %d renewals failed", s.Kept, s.Trials, s.Trials-s.Kept, s.Trials, s.RenewFailures))
		if s.Overlaps > 0 {
			n = append(n, "max overlap "+fmtDur(s.MaxOverlap))
		}
	case Deputy:
		if s.Overlaps > 0 {
			n = append(n, "max overlap "+fmtDur(s.MaxOverlap))
		}
		n = append(n, fmt.Sprintf("the deputy %s %d, frozen %d, cut off %d; taken over by the deputy %d/%d, by the follower %d/%d; release→successor max %s",
			"killed", s.ByFault["kill9"], s.ByFault["freeze"], s.ByFault["partition"], s.ByDeputy, s.Trials, s.Trials-s.ByDeputy, s.Trials, s.MaxHandover))
	case StorageLoss:
		if s.Overlaps > 0 {
			n = append(n, fmt.Sprintf("overlap p50 %s, max %s", fmtDur(s.MedianOverlap), fmtDur(s.MaxOverlap)))
		} else {
			n = append(n, "no overlap")
		}
		n = append(n, fmt.Sprintf("term reset %d/%d", s.TermResets, s.Trials))
	default:
		if s.Overlaps > 0 {
			n = append(n, "max overlap "+fmtDur(s.MaxOverlap))
		}
	}
	return strings.Join(n, "; ")
}

// Explanation is printed under the table: what the columns mean and why
// scenarios 8 and 9 are reported, not judged, on overlap.
const Explanation = `Columns: "child after fault" is the end of the holder's whole process group
(child and grandchildren; a SIGKILLed process ends at its last heartbeat,
written every 20 ms) minus the fault's start; "after last renewal" is the same
end minus the last acquire/renew request the proxy saw before the fault (an
upper bound of t_ok: the safety rule says at most 14 s); "failover" is the
follower's child's start minus the fault's start; "min gap" is the smallest
time between the holder's group's end and the follower's child's start
(negative = overlap). Every scenario must show 0 overlaps.

8 (freeze): leaderrun itself is SIGSTOPped longer than the lease. The guard
process that leads the child's group holds the last kill deadline leaderrun
gave it and kills the group by itself when it passes; "wake→kill" is negative
when the group was dead before leaderrun woke. A host frozen as a whole (a
paused VM) stops the guard too: only fencing (LEADERRUN_TERM checked by what
the child writes to) covers that.
9 (storage loss): the lease blob or its container is deleted; the holder
finds the lease gone at its next renewal (up to 5 s later), and the waiting
follower, which saw it held, waits out the holder's lease duration before it
creates the blob again, continuing the term.
11 (throttle): the holder's blob answers 503 ServerBusy or 500
OperationTimedOut beyond a token every 2-20 s; 12 (lost-answer): the holder's
renewals are applied but their answers lost (a 500 or a dropped connection).
Either leadership survives (a renewal got through in time) or the holder
stops by the rule; the follower never runs while the holder does.
10 (eviction): both run with --scheduled-events, each with its own fake
metadata service; a Preempt with a 30 s notice appears for the holder's VM.
The holder steps down (stop signal, SIGKILL after the kill grace, release,
exit 76); "dead before NotBefore" is NotBefore minus the holder's group's end,
"release→successor" the follower's child's start minus the moment the
holder's release reached its proxy.
13 (escape): the child's grandchildren leave its process group (under
timeout(1), in a session of their own, or orphaned by a double fork), half
the time deaf to SIGTERM; the run then ends by a lost lease (a black hole),
an outside SIGTERM to the holder's leaderrun, or kill -9 of it. Any process
of the holder's still recording once the follower's child began is an
overlap; one still running once the holder's leaderrun exited, a failure.
14 (deputy): a third leaderrun, the deputy (the first follower, behind a
proxy of its own, at the default 2 s poll and 250 ms deputy poll) stands by
beside a follower at the default poll; the holder gets SIGTERM, and from half
a second before to 0.7 s after it the deputy is killed, frozen (1-25 s) or
cut off (black hole or resets, 2-20 s): while it stands by, as its poll
finds the lease free, as it acquires and claims, or once its child runs.
"failover" is the first successor's child's start minus the SIGTERM,
"release→successor" the same minus the holder's release; an overlap between
any two of the three is a failure.
`

// Line is a one-line account of a trial, for progress output and test logs.
func (r *Result) Line() string {
	var b strings.Builder
	switch {
	case r.Err != nil:
		b.WriteString("ERROR")
	case r.Failed():
		b.WriteString("FAIL")
	default:
		b.WriteString("ok")
	}
	fmt.Fprintf(&b, " overlap %s, child after fault %s (after last renewal %s), failover %s, gap %s, holder exit %s",
		fmtDur(r.Overlap.D), r.ChildAfterFault, r.AfterLastRenewal, r.Failover, r.Gap, r.HolderExit)
	if r.WakeToKill.OK {
		fmt.Fprintf(&b, ", wake→kill %s", r.WakeToKill)
	}
	switch {
	case r.BeforeNotBefore.OK:
		fmt.Fprintf(&b, ", dead %s before NotBefore, release→successor %s", r.BeforeNotBefore, r.Handover)
	case r.Handover.OK:
		fmt.Fprintf(&b, ", release→successor %s", r.Handover)
	}
	if r.Successor != "" {
		fmt.Fprintf(&b, ", taken over by the %s", r.Successor)
	}
	if r.RenewFailures > 0 {
		fmt.Fprintf(&b, ", %d renewals failed", r.RenewFailures)
	}
	fmt.Fprintf(&b, " [%s; %s]", r.Params, fmtDur(r.Wall))
	return b.String()
}

// Details lists the failures, the error and the notes, one per line.
func (r *Result) Details() []string {
	var out []string
	if r.Err != nil {
		out = append(out, "error: "+r.Err.Error())
	}
	for _, f := range r.Failures {
		out = append(out, "failed: "+f)
	}
	for _, n := range r.Notes {
		out = append(out, "note: "+n)
	}
	return out
}
