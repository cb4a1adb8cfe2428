// The pause marker (NAME~pause, see names.go): while it exists and has not
// run out, no contender acquires NAME.

package lease

import "time"

// The pause marker's metadata keys. The marker is a zero-length blob of its
// own, so they do not count against the lease blob's 8 KB.
const (
	mdPauseReason = "reason" // printable ASCII, at most maxPauseReasonLen characters; absent if none given
	mdPauseSince  = "since"  // RFC 3339, service time: when the pause began
	mdPauseUntil  = "until"  // RFC 3339, service time; absent: until resume
)

const maxPauseReasonLen = 256

// Pause is a lease's pause, as its marker records it (service times).
type Pause struct {
	Reason string    // "" if none was given
	Since  time.Time // zero if not recorded
	Until  time.Time // zero: open-ended, until `leaderrun resume`
}

// pauseOf reads a pause marker's metadata (keys lowercase). The marker's
// existence is the pause, so a malformed value reads as absent: a malformed
// until errs on the side the operator asked for, open-ended.
func pauseOf(md map[string]string) *Pause {
	return &Pause{Reason: md[mdPauseReason], Since: parseTime(md[mdPauseSince]).UTC(), Until: parseTime(md[mdPauseUntil]).UTC()}
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
	return md, nil
}
