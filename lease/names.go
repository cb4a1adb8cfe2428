package lease

// How leaderrun names the blobs of one lease. A lease NAME is the blob
// NAME. Its few other blobs carry NAME, the separator "~" and a kind, so
// that one prefix listing of NAME finds them all and a listing of the
// container groups them under their lease. Blobs that accumulate, one per
// host, live under the helper prefix "~", which sorts after every lease name
// that begins with an ASCII character, so that neither the slot poll (a
// listing of NAME) nor `list` pages through them:
//
//	NAME              slot 0 (the only slot when --slots is 1)
//	NAME~slot-I       slot I, for I from 1 to N−1 (--slots N)
//	NAME~pause        the pause marker (leaderrun pause / resume)
//	NAME~trigger      the trigger marker (leaderrun trigger)
//	NAME~deputy       the deputy's place: a helper lease held by one waiting
//	                  follower, which then polls more often (deputy.go)
//	~done/NAME~HOST   HOST completed a run with status 0 (--once-per-host)
//	~output/NAME~TERM the output kept of the run of TERM (--keep-output;
//	                  ~output/NAME~slot-I~TERM for slot I: output.go)
//
// Lease names may therefore not contain "~". Done markers of earlier
// releases, NAME~done/HOST, are still read. Here too: Azure's naming rules
// for accounts, containers and blobs, and the pause and trigger markers'
// records.

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/leaderrun/leaderrun/exit"
)

// MarkerSep separates a lease name from the kind of one of its other blobs.
const MarkerSep = "~"

const (
	slotMarker    = "slot-"
	pauseMarker   = "pause"
	triggerMarker = "trigger"
	deputyPlace   = "deputy"
	doneMarker    = "done/"
	// HelperPrefix begins the names of the helper blobs that accumulate.
	HelperPrefix = MarkerSep
	// afterHelpers sorts after every name that begins with HelperPrefix
	// and before every name that begins with a non-ASCII character.
	afterHelpers = "\u0080"
)

// MaxSlots is the largest --slots.
const MaxSlots = 50

// BlobKind is what a blob of the container is to leaderrun.
type BlobKind int

const (
	KindSlot    BlobKind = iota // a lease blob: slot 0 (NAME) or NAME~slot-I
	KindPause                   // NAME~pause
	KindDone                    // NAME~done/HOST
	KindOther                   // NAME~something leaderrun does not write
	KindTrigger                 // NAME~trigger
	KindDeputy                  // NAME~deputy
)

// SlotBlob is the blob name of slot i of lease name.
func SlotBlob(name string, i int) string {
	if i == 0 {
		return name
	}
	return name + MarkerSep + slotMarker + strconv.Itoa(i)
}

// PauseBlob is the blob name of lease name's pause marker.
func PauseBlob(name string) string { return name + MarkerSep + pauseMarker }

// TriggerBlob is the blob name of lease name's trigger marker.
func TriggerBlob(name string) string { return name + MarkerSep + triggerMarker }

// DeputyBlob is the blob name of lease name's deputy's place.
func DeputyBlob(name string) string { return name + MarkerSep + deputyPlace }

// DonePrefix is the prefix of lease name's done markers.
func DonePrefix(name string) string { return HelperPrefix + doneMarker + name + MarkerSep }

// DoneBlob marks that host completed a run of lease name with status 0.
func DoneBlob(name, host string) string { return DonePrefix(name) + host }

// legacyDoneBlob is where releases before the helper prefix wrote DoneBlob.
func legacyDoneBlob(name, host string) string { return name + MarkerSep + doneMarker + host }

// BlobName is a blob name as leaderrun reads it.
type BlobName struct {
	Lease string   // the lease it belongs to
	Kind  BlobKind // what it is
	Slot  int      // KindSlot: the slot
	Host  string   // KindDone: the host
}

// ParseBlobName tells which lease a blob belongs to and what it is. A name
// without the separator is slot 0 of the lease of that name.
func ParseBlobName(blob string) BlobName {
	if rest, ok := strings.CutPrefix(blob, HelperPrefix+doneMarker); ok {
		lease, host, found := strings.Cut(rest, MarkerSep)
		if !found || lease == "" || host == "" {
			return BlobName{Kind: KindOther}
		}
		return BlobName{Lease: lease, Kind: KindDone, Host: host}
	}
	lease, rest, found := strings.Cut(blob, MarkerSep)
	if !found {
		return BlobName{Lease: blob, Kind: KindSlot}
	}
	b := BlobName{Lease: lease, Kind: KindOther}
	switch {
	case rest == pauseMarker:
		b.Kind = KindPause
	case rest == triggerMarker:
		b.Kind = KindTrigger
	case rest == deputyPlace:
		b.Kind = KindDeputy
	case strings.HasPrefix(rest, doneMarker) && len(rest) > len(doneMarker):
		b.Kind, b.Host = KindDone, rest[len(doneMarker):]
	case strings.HasPrefix(rest, slotMarker):
		digits := rest[len(slotMarker):]
		if i, err := strconv.Atoi(digits); err == nil && i >= 1 && i < MaxSlots && strconv.Itoa(i) == digits {
			b.Kind, b.Slot = KindSlot, i
		}
	}
	return b
}

// validateContainer applies Azure's container naming rules.
func validateContainer(name string) error {
	bad := func(why string) error { return configErr("container name", "%s: %s", exit.Quote(name), why) }
	if len(name) < 3 || len(name) > 63 {
		return bad("must be 3 to 63 characters long")
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		switch {
		case ch >= 'a' && ch <= 'z', ch >= '0' && ch <= '9':
		case ch == '-':
			if i == 0 || i == len(name)-1 {
				return bad("must start and end with a letter or digit")
			}
			if name[i-1] == '-' {
				return bad("must not contain consecutive hyphens")
			}
		default:
			return bad("only lowercase letters, digits and hyphens are allowed")
		}
	}
	return nil
}

// validateBlobName refuses names Azure rejects or a URL would rewrite.
func validateBlobName(name string) error {
	bad := func(why string) error { return configErr("lease name", "%s: %s", exit.Quote(name), why) }
	switch {
	case name == "":
		return configErr("lease name", "empty: set --lease (LEADERRUN_LEASE)")
	case len(name) > 1024:
		return bad("longer than 1024 characters")
	case strings.HasSuffix(name, "."):
		return bad("must not end with a dot")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return bad("control characters and backslashes are not allowed")
		}
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad(`empty, "." and ".." path segments are not allowed`)
		}
	}
	return nil
}

// validateAccount applies Azure's account naming rules (it becomes a host name).
func validateAccount(name string) error {
	if len(name) < 3 || len(name) > 24 {
		return configErr("storage account", "%s: must be 3 to 24 characters long", exit.Quote(name))
	}
	for i := 0; i < len(name); i++ {
		if ch := name[i]; !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9') {
			return configErr("storage account", "%s: only lowercase letters and digits are allowed", exit.Quote(name))
		}
	}
	return nil
}

func escapeBlobName(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// The pause marker's metadata keys. While the marker exists and has not run
// out, no contender acquires NAME. It is a zero-length blob of its own, so
// its keys do not count against the lease blob's 8 KB.
const (
	mdPauseReason = "reason" // printable ASCII, at most maxPauseReasonLen characters; absent if none given
	mdPauseSince  = "since"  // RFC 3339, service time: when the pause began
	mdPauseUntil  = "until"  // RFC 3339, service time; absent: until resume
	mdPauseDrain  = "drain"  // "true": pause --drain, which also broke the holders' leases; absent otherwise
)

const maxPauseReasonLen = 256

// Pause is a lease's pause, as its marker records it (service times).
type Pause struct {
	Reason string    // "" if none was given
	Since  time.Time // zero if not recorded
	Until  time.Time // zero: open-ended, until `leaderrun resume`
	Drain  bool      // pause --drain: the holders' leases were broken too (a run it cut reads as drained)
}

// pauseOf reads a pause marker's metadata (keys lowercase). The marker's
// existence is the pause, so a malformed value reads as absent: a malformed
// until errs on the side the operator asked for, open-ended.
func pauseOf(md map[string]string) *Pause {
	return &Pause{Reason: md[mdPauseReason], Since: parseTime(md[mdPauseSince]).UTC(), Until: parseTime(md[mdPauseUntil]).UTC(),
		Drain: md[mdPauseDrain] == "true"}
}

// Active reports whether the pause holds at now (the service's Date): a nil
// pause never does, an open-ended one always, one with Until until then.
// With a zero now (no Date seen) a pause with Until is taken as active.
func (p *Pause) Active(now time.Time) bool {
	if p == nil {
		return false
	}
	return p.Until.IsZero() || now.IsZero() || now.Before(p.Until)
}

// Metadata is what `leaderrun pause` writes on the marker. A reason not in
// printable ASCII, over 256 characters or space-padded is a *ConfigError.
func (p Pause) Metadata() (map[string]string, error) {
	md := map[string]string{}
	if p.Reason != "" {
		if err := checkHeaderValue("pause reason", p.Reason, maxPauseReasonLen); err != nil {
			return nil, err
		}
		md[mdPauseReason] = p.Reason
	}
	if !p.Since.IsZero() {
		md[mdPauseSince] = formatTime(p.Since)
	}
	if !p.Until.IsZero() {
		md[mdPauseUntil] = formatTime(p.Until)
	}
	if p.Drain {
		md[mdPauseDrain] = "true"
	}
	return md, nil
}

// The trigger marker's metadata keys. The marker asks the next invocation
// of the lease's line (--schedule, --once-per, --once) to run COMMAND once,
// now; the claim that does consumes it by recording its nonce in the lease
// blob's metadata (mdTriggered), so that a marker left behind, or read by
// another contender at the same time, does not run twice. It is a
// zero-length blob of its own: its keys do not count against the lease
// blob's 8 KB.
const (
	mdTriggerBy     = "by"     // who asked: printable ASCII, at most maxTriggerByLen characters
	mdTriggerAt     = "at"     // RFC 3339, service time: when (the run's LEADERRUN_OCCURRENCE)
	mdTriggerReason = "reason" // why: printable ASCII, at most maxPauseReasonLen; absent if none given
	mdTriggerNonce  = "nonce"  // a random value per trigger
)

const maxTriggerByLen = 128

// Trigger is a request to run a lease's line once, now, as its marker
// records it (service time).
type Trigger struct {
	By     string    // who asked
	At     time.Time // when, by the service's clock
	Reason string    // why; "" if none given
	Nonce  string    // identifies this request: the claim that runs it records it
}

// triggerOf reads a trigger marker's metadata (keys lowercase); nil if it
// has no nonce (nothing leaderrun wrote, or a partial write).
func triggerOf(md map[string]string) *Trigger {
	if md[mdTriggerNonce] == "" {
		return nil
	}
	return &Trigger{By: md[mdTriggerBy], At: parseTime(md[mdTriggerAt]).UTC(), Reason: md[mdTriggerReason], Nonce: md[mdTriggerNonce]}
}

// Metadata is what `leaderrun trigger` writes on the marker. A who or a
// reason not in printable ASCII, too long or space-padded is a
// *ConfigError.
func (t Trigger) Metadata() (map[string]string, error) {
	if err := checkHeaderValue("trigger's requester", t.By, maxTriggerByLen); err != nil {
		return nil, err
	}
	md := map[string]string{mdTriggerBy: t.By, mdTriggerNonce: t.Nonce}
	if t.Reason != "" {
		if err := checkHeaderValue("trigger reason", t.Reason, maxPauseReasonLen); err != nil {
			return nil, err
		}
		md[mdTriggerReason] = t.Reason
	}
	if !t.At.IsZero() {
		md[mdTriggerAt] = formatTime(t.At)
	}
	return md, nil
}

// pendingIn reports whether t is still to run by the lease blob's
// metadata p: not consumed by a claim. A nil t is not.
func (t *Trigger) pendingIn(p *Properties) bool {
	if t == nil {
		return false
	}
	nonce, _ := p.Triggered()
	return nonce != t.Nonce
}
