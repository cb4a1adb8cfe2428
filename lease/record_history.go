package lease

// The run history a lease blob keeps in its metadata, the last success, and
// a run's fate (how it ended, in the words status, list and history show).
// History costs no request of its own: it is rewritten in the writes a run
// already makes ([startRun], [recordRunEnd]). Each run is one key, newest
// first:
//
//	history0 = "TERM,START,END,EXIT,HOLDER"   e.g. "43,1795000000,1795000192,1,vm-2"
//
// START and END are Unix seconds of the service's clock; END and EXIT are
// empty when unknown (the holder lost the lease or died before recording its
// end: the next claim finds lastrunstart without lastrunend and archives the
// run so). HOLDER comes last so that it needs no escaping.
//
// # Size
//
// Azure allows 8192 bytes of metadata per blob, names and values together.
// leaderrun's own keys, names included, take at most 1130: holders of 256
// characters (holder 262, lastrunholder 269, lastsuccessholder 273), terms of
// 19 digits (23, 30, 34), times of 20 (acquiredat 30, lastrunstart 32,
// lastrunend 30, lastsuccessend 34), leaseduration 15, lastexit 11,
// leaderrunversion 80 (64 characters), slots 7. A history entry takes at most
// 151 (name 9, term 19, two times of 10, exit 3, holder 96, four commas):
// historyLen = 20 entries 3010, everything 4140, leaving 4052 for others'
// keys (26 entries would leave a 3 KB reserve). Holders over 96 characters
// are cut in history entries (the first 93 and "..."), whole in the lastrun
// and lastsuccess keys.
//
// A run of a schedule or a trigger also records why it ran ([Cause]), one
// key per run beside its entry: a scheduled one about 50 bytes, a manual
// one at most 191 (its requester cut to 32 characters, its reason to 48).
// With the keys of --schedule, --retries and triggers at their largest and
// every run of the history a manual one at its longest, everything takes
// 8054 bytes: within the limit, with no room for others' keys. Should
// foreign keys crowd the metadata, [pushRun] (and a claim, [fitMetadata])
// drops the oldest entries, and their causes, until it fits.

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	historyLen       = 20      // how many runs a blob's history keeps
	maxMetadataSize  = 8 << 10 // Azure's limit on a blob's metadata, names and values together
	historyHolderMax = 96      // the longest holder a history entry keeps
	cutMark          = "..."
)

// same: r and o are the same run, as far as a history entry tells (holder cut).
func (r Run) same(o Run) bool {
	return r.Term == o.Term && r.Start.Equal(o.Start) && historyHolder(r.Holder) == historyHolder(o.Holder)
}

// historyHolder is holder as a history entry keeps it.
func historyHolder(holder string) string {
	if len(holder) <= historyHolderMax {
		return holder
	}
	return holder[:historyHolderMax-len(cutMark)] + cutMark
}

func historyKey(i int) string { return mdHistoryPrefix + strconv.Itoa(i) }

func encodeRun(r Run) string {
	var end, exit string
	if !r.End.IsZero() {
		end = strconv.FormatInt(r.End.Unix(), 10)
	}
	if validExit(r.ExitCode) {
		exit = strconv.Itoa(*r.ExitCode)
	}
	return strconv.FormatInt(r.Term, 10) + "," + strconv.FormatInt(r.Start.Unix(), 10) + "," +
		end + "," + exit + "," + historyHolder(r.Holder)
}

// decodeRun reads one history entry; ok is false for a malformed one.
func decodeRun(v string) (r Run, ok bool) {
	f := strings.SplitN(v, ",", 5)
	if len(f) != 5 {
		return Run{}, false
	}
	term, err := parseTerm(f[0])
	if err != nil {
		return Run{}, false
	}
	start, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || start <= 0 {
		return Run{}, false
	}
	r = Run{Holder: f[4], Term: term, Start: time.Unix(start, 0).UTC()}
	if f[2] != "" {
		end, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || end <= 0 {
			return Run{}, false
		}
		r.End = time.Unix(end, 0).UTC()
	}
	if f[3] != "" {
		code, err := strconv.Atoi(f[3])
		if err != nil || !validExit(&code) {
			return Run{}, false
		}
		r.ExitCode = &code
	}
	return r, true
}

// ring reads the history entries, newest first, skipping malformed ones.
func ring(md map[string]string) []Run {
	var runs []Run
	for i := range historyLen {
		if r, ok := decodeRun(md[historyKey(i)]); ok {
			runs = append(runs, r)
		}
	}
	return runs
}

// historyIndex is i for the key history<i> (0 … historyLen−1), else -1.
func historyIndex(key string) int {
	digits, ok := strings.CutPrefix(key, mdHistoryPrefix)
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(digits)
	if err != nil || i < 0 || i >= historyLen || strconv.Itoa(i) != digits {
		return -1
	}
	return i
}

// writeRing replaces md's history with runs (newest first), historyLen at
// most, and drops the causes of runs it no longer names (the lastrun*
// keys' run keeps its own).
func writeRing(md map[string]string, runs []Run) {
	for i := range historyLen {
		delete(md, historyKey(i))
	}
	keep := map[int64]bool{}
	if t, err := parseTerm(md[mdLastRunTerm]); err == nil && md[mdLastRunTerm] != "" {
		keep[t] = true
	}
	for i, r := range runs[:min(len(runs), historyLen)] {
		md[historyKey(i)] = encodeRun(r)
		keep[r.Term] = true
	}
	for k := range md {
		if t, ok := causeTerm(k); ok && !keep[t] {
			delete(md, k)
		}
	}
}

// metadataSize is what Azure counts against maxMetadataSize.
func metadataSize(md map[string]string) int {
	n := 0
	for k, v := range md {
		n += len(k) + len(v)
	}
	return n
}

// pushRun returns a copy of md (keys lowercased) with r, if it has a start,
// as the newest history entry; one there already (same term, start, holder)
// is replaced only if r knows more (an end or exit). The oldest entries are
// dropped beyond historyLen and while over maxMetadataSize.
func pushRun(md map[string]string, r Run) map[string]string {
	out := lowered(md)
	if r.Start.IsZero() {
		return out
	}
	runs := ring(out)
	if i := slices.IndexFunc(runs, r.same); i >= 0 {
		if runs[i].End.IsZero() && runs[i].ExitCode == nil && (!r.End.IsZero() || validExit(r.ExitCode)) {
			runs[i] = r
		}
	} else {
		runs = append([]Run{r}, runs...)
	}
	for n := min(len(runs), historyLen); n >= 0; n-- {
		writeRing(out, runs[:n])
		if metadataSize(out) <= maxMetadataSize {
			break
		}
	}
	return out
}

// fitMetadata returns md with the oldest history entries (and their causes)
// dropped while it is over maxMetadataSize: a claim's write adds keys after
// the history was pushed.
func fitMetadata(md map[string]string) map[string]string {
	if metadataSize(md) <= maxMetadataSize {
		return md
	}
	runs := ring(md)
	for n := len(runs); n >= 0; n-- {
		writeRing(md, runs[:n])
		if metadataSize(md) <= maxMetadataSize {
			break
		}
	}
	return md
}

// ReadHistory returns the runs md records, newest first: the lastrun* keys'
// run (Running if it has no end and held says the lease is held now), then
// the history entries, each with its cause if recorded. Malformed entries
// read as absent, so that status shows what it can. md's keys must be
// lowercase (as in Properties.Metadata).
func ReadHistory(md map[string]string, held bool) []Run {
	runs := ring(md)
	if last, ok := lastRun(md); ok && !slices.ContainsFunc(runs, last.same) {
		last.Running = held && last.End.IsZero() && last.ExitCode == nil
		runs = append([]Run{last}, runs...)
	}
	for i := range runs {
		if c, ok := decodeCause(md[causeKey(runs[i].Term)]); ok && runs[i].Term > 0 {
			runs[i].Cause = &c
		}
	}
	return runs
}

// LastSuccess returns the last run md records as ended with status 0 (nil:
// none): the lastsuccess* keys (Holder, Term, End; no Start), or the
// history's newest success if that ended later (metadata written before
// those keys). md's keys must be lowercase.
func LastSuccess(md map[string]string) *Run {
	var best *Run
	if end := parseTime(md[mdLastSuccessEnd]); !end.IsZero() {
		zero := 0
		term, _ := parseTerm(md[mdLastSuccessTerm])
		best = &Run{Holder: md[mdLastSuccessHolder], Term: term, End: end.UTC(), ExitCode: &zero}
	}
	for _, r := range ReadHistory(md, false) {
		if r.Succeeded() && !r.End.IsZero() && (best == nil || r.End.After(best.End)) {
			best = &r
		}
	}
	return best
}

// Fate is how a run ended, or that it has not: what status, list and history
// show of a run, in the same words everywhere. [View.Fate] names it.
type Fate struct {
	Kind   FateKind
	Code   int // FateExited: the exit status; FateSignalled: 128+Signal, as recorded
	Signal int // FateSignalled: the signal that ended COMMAND
}

// FateKind is one of the ways a run ends.
type FateKind string

const (
	FateRunning   FateKind = "running"   // no end recorded, and its holder still holds the lease
	FateExited    FateKind = "exited"    // COMMAND exited with Code
	FateSignalled FateKind = "signalled" // COMMAND was ended by Signal (its status 128+N recorded)
	FateEnded     FateKind = "ended"     // an end recorded without an exit status
	FateLost      FateKind = "lost"      // no end recorded: its holder lost the lease or died first
	FateBroken    FateKind = "broken"    // no end recorded, and an operator broke its lease (break)
	FateDrained   FateKind = "drained"   // no end recorded, and an operator drained it (pause --drain)
)

// String is the fate in words: "running", "exited 0", "killed by signal 15
// (SIGTERM)", "ended, exit unknown", "lost its lease", "broken by an
// operator", "drained".
func (f Fate) String() string {
	switch f.Kind {
	case FateExited:
		return "exited " + strconv.Itoa(f.Code)
	case FateSignalled:
		return "killed by signal " + strconv.Itoa(f.Signal) + " (" + unix.SignalName(syscall.Signal(f.Signal)) + ")"
	case FateEnded:
		return "ended, exit unknown"
	case FateLost:
		return "lost its lease"
	case FateBroken:
		return "broken by an operator"
	}
	return string(f.Kind) // running, drained
}

// Over reports whether the run is over: every fate but running.
func (f Fate) Over() bool { return f.Kind != FateRunning }

// fateOf names r's fate. current: r is the run of its slot's lastrun* keys,
// whose lease is now in state; drain: a drain (pause --drain) is in force
// that began at or after r's start. Only a slot's current run can be
// running, broken or drained: an older run without an end was archived by
// the next claim, whatever cut it. A current run whose lease is breaking or
// broken was broken by an operator; once its holder has stopped and
// released, the lease reads available, and only a drain's pause marker
// still tells an operator's hand from any other loss.
//
// A status 128+N of a signal that has a name reads as that signal (a shell
// reports a death by signal so, and so does leaderrun's record): a COMMAND
// that exits 143 by itself reads as killed by SIGTERM.
func fateOf(r Run, current bool, state State, drain bool) Fate {
	switch {
	case validExit(r.ExitCode) && *r.ExitCode > 128 && unix.SignalName(syscall.Signal(*r.ExitCode-128)) != "":
		return Fate{Kind: FateSignalled, Code: *r.ExitCode, Signal: *r.ExitCode - 128}
	case validExit(r.ExitCode):
		return Fate{Kind: FateExited, Code: *r.ExitCode}
	case !r.End.IsZero():
		return Fate{Kind: FateEnded}
	case !current:
		return Fate{Kind: FateLost}
	case state == StateLeased:
		return Fate{Kind: FateRunning}
	case drain:
		return Fate{Kind: FateDrained}
	case state == StateBreaking || state == StateBroken:
		return Fate{Kind: FateBroken}
	}
	return Fate{Kind: FateLost}
}

// Why a run ran: a scheduled occurrence, a retry of one (--retries), or a
// trigger (leaderrun trigger). Cause.Trigger's values, as COMMAND gets them
// in LEADERRUN_TRIGGER.
const (
	TriggerSchedule = "schedule"
	TriggerRetry    = "retry"
	TriggerManual   = "manual"
)

// Cause is why a run ran, as its claim recorded it beside the history:
//
//	cause<TERM> = "TRIGGER,ATTEMPT,OCCURRENCE,MISSED,BY,REASON"   e.g. "retry,2,1795000000,0,,"
//
// OCCURRENCE is Unix seconds; MISSED is empty when unknown; BY has its
// commas and percent signs escaped (%2C, %25); REASON comes last, so that
// it needs no escaping. A run without one (a service's, --once-per's
// without a trigger) records none.
type Cause struct {
	Trigger    string    // TriggerSchedule, TriggerRetry or TriggerManual
	Attempt    int       // the attempt of Occurrence, 1 …; a manual run's is 1
	Occurrence time.Time // the occurrence it ran; a manual run's is the trigger's time
	Missed     int       // occurrences due since the previous one started that never started; -1: unknown
	By, Reason string    // a manual run: who triggered it, and why (cut: causeByMax, causeReasonMax)
}

const (
	causeByMax     = 32 // the longest BY a cause keeps; longer ones are cut ending in "..."
	causeReasonMax = 48 // the longest REASON
)

// String is the cause as history shows it: "schedule 2026-03-10T03:00Z",
// "retry 2 of 2026-03-10T03:00Z", "manual by alice@vm-1: a fix". An
// occurrence is a cron schedule's, to the minute, and is written so (RFC
// 3339's date and time without the seconds), which keeps history's table
// within a terminal's 80 columns.
func (c Cause) String() string {
	switch c.Trigger {
	case TriggerManual:
		s := "manual"
		if c.By != "" {
			s += " by " + c.By
		}
		if c.Reason != "" {
			s += ": " + c.Reason
		}
		return s
	case TriggerRetry:
		return "retry " + strconv.Itoa(c.Attempt) + " of " + minuteTime(c.Occurrence)
	}
	return c.Trigger + " " + minuteTime(c.Occurrence)
}

// minuteTime is t in UTC to the minute, "2026-03-10T03:00Z".
func minuteTime(t time.Time) string {
	if t.Second() != 0 || t.Nanosecond() != 0 {
		return formatTime(t)
	}
	return t.UTC().Format("2006-01-02T15:04Z")
}

func causeKey(term int64) string { return mdCausePrefix + strconv.FormatInt(term, 10) }

// causeTerm is TERM for the key cause<TERM>.
func causeTerm(key string) (int64, bool) {
	digits, ok := strings.CutPrefix(key, mdCausePrefix)
	if !ok || digits == "" {
		return 0, false
	}
	t, err := strconv.ParseInt(digits, 10, 64)
	return t, err == nil && t > 0 && strconv.FormatInt(t, 10) == digits
}

// cut is s within n characters, cut ending in "..." if longer.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-len(cutMark)] + cutMark
}

var byEscaper = strings.NewReplacer("%", "%25", ",", "%2C")

func encodeCause(c Cause) string {
	missed := ""
	if c.Missed >= 0 {
		missed = strconv.Itoa(c.Missed)
	}
	var occ string
	if !c.Occurrence.IsZero() {
		occ = strconv.FormatInt(c.Occurrence.Unix(), 10)
	}
	return c.Trigger + "," + strconv.Itoa(max(c.Attempt, 1)) + "," + occ + "," + missed + "," +
		byEscaper.Replace(cut(c.By, causeByMax)) + "," + cut(c.Reason, causeReasonMax)
}

// decodeCause reads a cause; ok is false for a malformed one.
func decodeCause(v string) (c Cause, ok bool) {
	f := strings.SplitN(v, ",", 6)
	if len(f) != 6 {
		return Cause{}, false
	}
	switch f[0] {
	case TriggerSchedule, TriggerRetry, TriggerManual:
	default:
		return Cause{}, false
	}
	c = Cause{Trigger: f[0], Missed: -1, Reason: f[5]}
	var err error
	if c.Attempt, err = strconv.Atoi(f[1]); err != nil || c.Attempt < 1 {
		return Cause{}, false
	}
	if f[2] != "" {
		occ, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || occ <= 0 {
			return Cause{}, false
		}
		c.Occurrence = time.Unix(occ, 0).UTC()
	}
	if f[3] != "" {
		if c.Missed, err = strconv.Atoi(f[3]); err != nil || c.Missed < 0 {
			return Cause{}, false
		}
	}
	by, err := url.PathUnescape(f[4])
	if err != nil {
		return Cause{}, false
	}
	c.By = by
	return c, true
}
