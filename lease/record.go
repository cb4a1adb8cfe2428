package lease

// record.go: what leaderrun records in a lease blob's metadata: every key,
// their read, a run's start and end (which keep foreign keys). The claim's
// write: claim.go; the history and size limit: record_history.go.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The blob's metadata keys, written only while holding the lease
// (docs/design.md describes each). Azure metadata names are case-insensitive:
// leaderrun reads and writes every key, foreign ones too, lowercased.
const (
	// The claim's, at every acquire.
	mdHolder        = "holder"
	mdTerm          = "term"
	mdLeaseDuration = "leaseduration"
	mdAcquiredAt    = "acquiredat"
	mdVersion       = "leaderrunversion"
	mdClaim         = "claim"      // a nonce per Acquire call: a claim that landed, its answer lost, reads back as ours
	mdSlots         = "slots"      // the slot count, on every slot blob of a lease of several
	mdSchedule      = "schedule"   // a scheduled lease's schedule, as given
	mdOccurrence    = "occurrence" // and its occurrence last started (RFC 3339, UTC)
	mdAttempt       = "attempt"    // and the attempt of it last started, 1 … (--retries); absent: 1
	// The kind of line of the latest claim: schedule, once-per or once
	// (the lines a trigger runs: `leaderrun trigger` asks); absent for others.
	mdMode = "mode"
	// "TERM,NONCE": the trigger marker (names.go) consumed last, by the
	// claim of TERM. A marker with that nonce has run (or runs).
	mdTriggered = "triggered"
	// "TERM,TIME": the run of TERM was found, at TIME (RFC 3339), with no
	// end recorded and its lease free; a retry's delay counts from then.
	mdLostAt = "lostat"
	// cause<TERM>: why the run of TERM ran (Cause), beside the history.
	mdCausePrefix = "cause"

	// The last run: its start is written with the claim, its end after.
	mdLastRunStart  = "lastrunstart"
	mdLastRunEnd    = "lastrunend"
	mdLastRunHolder = "lastrunholder"
	mdLastRunTerm   = "lastrunterm" // term of the run in lastrunstart
	mdLastExit      = "lastexit"

	// The last success, which outlives the history, and the history.
	mdLastSuccessEnd    = "lastsuccessend"    // RFC 3339, service time
	mdLastSuccessHolder = "lastsuccessholder" // whole identity
	mdLastSuccessTerm   = "lastsuccessterm"   // decimal
	mdHistoryPrefix     = "history"           // history0 (newest) … history19
)

// newProperties parses a read's metadata; malformed values read as absent (status shows what it can).
func newProperties(state State, raw map[string]string, date time.Time) *Properties {
	md := lowered(raw)
	p := &Properties{Exists: true, State: state, Metadata: md, Date: date, Holder: md[mdHolder],
		AcquiredAt: parseTime(md[mdAcquiredAt]), Directory: isDirectory(md),
		Schedule: md[mdSchedule], Occurrence: parseTime(md[mdOccurrence]), Mode: md[mdMode]}
	p.Term, _ = parseTerm(md[mdTerm])
	p.Attempt = 1
	if n, err := strconv.Atoi(md[mdAttempt]); err == nil && n >= 1 {
		p.Attempt = n
	}
	if s, err := strconv.Atoi(md[mdLeaseDuration]); err == nil && s > 0 {
		p.LeaseDuration = time.Duration(s) * time.Second
	}
	if r, ok := lastRun(md); ok {
		p.LastRun = &r
	}
	return p
}

// parseTerm reads the stored fencing token: "" is 0; anything but a
// non-negative decimal is an error: a guessed term could go backwards.
func parseTerm(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t, err := strconv.ParseInt(s, 10, 64)
	if err != nil || t < 0 {
		return 0, fmt.Errorf("the blob's metadata term=%q is not a non-negative decimal integer", s)
	}
	return t, nil
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// withinWindow reports whether p records a run started less than window
// ago by the service's clock (p.Date); without a Date or a start, no.
func withinWindow(p *Properties, window time.Duration) bool {
	if window <= 0 || p == nil || p.LastRun == nil || p.Date.IsZero() {
		return false
	}
	return p.Date.Sub(p.LastRun.Start) < window
}

func skipError(p *Properties, window time.Duration) *SkipError {
	return &SkipError{Holder: p.LastRun.Holder, Start: p.LastRun.Start, Window: window}
}

// lowered is a copy of md, keys lowercased.
func lowered(md map[string]string) map[string]string {
	out := make(map[string]string, len(md))
	for k, v := range md {
		out[strings.ToLower(k)] = v
	}
	return out
}

// Run is one run of COMMAND under a lease, in service times (to the second).
type Run struct {
	Holder   string    // who ran it; from a history entry at most 96 characters, a longer one cut ending in "..."
	Term     int64     // the term it ran under; 0 if unknown
	Start    time.Time // when it started; never zero in a Run read back
	End      time.Time // when it ended; zero while running or when not recorded
	ExitCode *int      // its exit status (0–255); nil while running or when not recorded
	Running  bool      // no end recorded, and its holder still holds the lease (else: EndUnknown)
	Cause    *Cause    // why it ran (a schedule, a retry, a trigger); nil if not recorded
}

// EndUnknown reports whether the run is over with its end never recorded:
// its holder lost the lease or died first. It counts as failed. (Not
// Lease.Lost, the keeper's channel.)
func (r Run) EndUnknown() bool { return !r.Running && r.End.IsZero() && r.ExitCode == nil }

// Succeeded reports whether the run ended with status 0.
func (r Run) Succeeded() bool { return r.ExitCode != nil && *r.ExitCode == 0 }

// Failed reports whether the run ended with status ≠ 0 or its end is unknown.
func (r Run) Failed() bool { return r.EndUnknown() || (r.ExitCode != nil && *r.ExitCode != 0) }

// claimedKey reports whether key is one a claim changes to say a run
// started: lastrun*, the history and the runs' causes, the scheduled
// occurrence and attempt it runs, the trigger it consumes, the lost run it
// archives, and the kind of line.
func claimedKey(key string) bool {
	switch key {
	case mdLastRunStart, mdLastRunEnd, mdLastRunHolder, mdLastRunTerm, mdLastExit,
		mdSchedule, mdOccurrence, mdAttempt, mdMode, mdTriggered, mdLostAt:
		return true
	}
	_, ok := causeTerm(key)
	return ok || historyIndex(key) >= 0
}

func validExit(code *int) bool { return code != nil && *code >= 0 && *code <= 255 }

// lastRun is the run of the lastrun* keys; ok false if lastrunstart is
// absent or malformed. Its term is lastrunterm or, written before that key,
// term (which the claim wrote with lastrunstart).
func lastRun(md map[string]string) (r Run, ok bool) {
	start := parseTime(md[mdLastRunStart])
	if start.IsZero() {
		return Run{}, false
	}
	r = Run{Holder: md[mdLastRunHolder], Start: start.UTC(), End: parseTime(md[mdLastRunEnd]).UTC()}
	termKey := mdLastRunTerm
	if _, has := md[mdLastRunTerm]; !has {
		termKey = mdTerm
	}
	r.Term, _ = parseTerm(md[termKey])
	if code, err := strconv.Atoi(md[mdLastExit]); err == nil && validExit(&code) {
		r.ExitCode = &code
	}
	return r, true
}

// startRun returns md (keys lowercased) with r as the run starting now: the
// lastrun* keys' run goes to the history first (end and exit unknown if not
// recorded; not twice), then the lastrun* keys describe r, with no end or
// exit (a zero r.Start removes lastrunstart: the previous run's is not
// this one's). Call it on the metadata as read, before the claim's term.
func startRun(md map[string]string, r Run) map[string]string {
	out := lowered(md)
	if prev, ok := lastRun(out); ok {
		out = pushRun(out, prev)
	}
	setTime(out, mdLastRunStart, r.Start)
	setLastRun(out, Run{Holder: r.Holder, Term: r.Term})
	return out
}

// recordRunEnd returns md (keys lowercased) with run r's end: the lastrun*
// keys describe r, r goes to the history and, if it ended with status 0 at a
// known time, the lastsuccess* keys name it (they outlive the history, for
// `leaderrun check`). An exit code outside 0–255 is recorded as unknown.
func recordRunEnd(md map[string]string, r Run) map[string]string {
	out := lowered(md)
	if !r.Start.IsZero() {
		out[mdLastRunStart] = formatTime(r.Start)
	}
	if !validExit(r.ExitCode) {
		r.ExitCode = nil
	}
	setLastRun(out, r)
	if r.Succeeded() && !r.End.IsZero() {
		out[mdLastSuccessEnd] = formatTime(r.End)
		out[mdLastSuccessHolder] = r.Holder
		out[mdLastSuccessTerm] = strconv.FormatInt(r.Term, 10)
	}
	return pushRun(out, r)
}

// setLastRun sets lastrunholder, lastrunterm, lastrunend and lastexit from
// r, removing an end or exit r does not know.
func setLastRun(md map[string]string, r Run) {
	md[mdLastRunHolder] = r.Holder
	md[mdLastRunTerm] = strconv.FormatInt(r.Term, 10)
	setTime(md, mdLastRunEnd, r.End)
	if validExit(r.ExitCode) {
		md[mdLastExit] = strconv.Itoa(*r.ExitCode)
	} else {
		delete(md, mdLastExit)
	}
}

func setTime(md map[string]string, key string, t time.Time) {
	if t.IsZero() {
		delete(md, key)
	} else {
		md[key] = formatTime(t)
	}
}

// The kinds of line a claim records (mdMode): those a trigger runs.
const (
	ModeSchedule = "schedule" // --schedule
	ModeOncePer  = "once-per" // --once-per
	ModeOnce     = "once"     // --once
)

// LastAttempt is what p records of the occurrence last started
// (p.Occurrence, p.Attempt): that attempt's run, the newest run not
// triggered by hand, if it started at or after the occurrence (nil if the
// record has none); and when it was found lost, its lease free and no end
// recorded (zero if not recorded). The run is Running only if p shows the
// lease held.
func (p *Properties) LastAttempt() (run *Run, lost time.Time) {
	if p == nil || p.Occurrence.IsZero() {
		return nil, time.Time{}
	}
	for _, r := range ReadHistory(p.Metadata, p.State.Held()) {
		if r.Cause != nil && r.Cause.Trigger == TriggerManual {
			continue
		}
		if r.Start.Before(p.Occurrence.Truncate(time.Second)) {
			return nil, time.Time{}
		}
		term, at := termAnd(p.Metadata[mdLostAt])
		if term == r.Term {
			lost = parseTime(at)
		}
		return &r, lost
	}
	return nil, time.Time{}
}

// Triggered is the trigger marker's nonce the lease records as consumed
// last, and the term of the claim that consumed it; "" if none.
func (p *Properties) Triggered() (nonce string, term int64) {
	term, nonce = termAnd(p.Metadata[mdTriggered])
	return nonce, term
}

// termAnd reads "TERM,REST"; 0 and "" if malformed.
func termAnd(v string) (int64, string) {
	t, rest, ok := strings.Cut(v, ",")
	term, err := parseTerm(t)
	if !ok || err != nil || term <= 0 || rest == "" {
		return 0, ""
	}
	return term, rest
}

// recordedSlots is the slot count a slot blob's metadata records: its slots
// key; without it 1 if the blob was ever claimed (a term: one slot writes no
// slots key), else 0 (unknown: never claimed). Malformed reads as unknown.
func recordedSlots(md map[string]string) int {
	if v, ok := md[mdSlots]; ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= MaxSlots {
			return n
		}
		return 0
	}
	if md[mdTerm] != "" {
		return 1
	}
	return 0
}

// slotsMismatch is the count md records if not n; 0 if it agrees or is unknown.
func slotsMismatch(md map[string]string, n int) int {
	if r := recordedSlots(md); r != 0 && r != n {
		return r
	}
	return 0
}
