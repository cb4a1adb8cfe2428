package lease

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
)

// The blob's metadata keys: what leaderrun records on the lease blob, written
// only while holding the lease (docs/design.md describes each). Azure
// metadata names are case-insensitive; leaderrun reads them lowercased and
// writes every key, foreign ones included, lowercased.
const (
	mdHolder        = "holder"
	mdTerm          = "term"
	mdLeaseDuration = "leaseduration"
	mdAcquiredAt    = "acquiredat"
	mdLastRunStart  = "lastrunstart"
	mdLastRunEnd    = "lastrunend"
	mdLastRunHolder = "lastrunholder"
	mdLastExit      = "lastexit"
	mdVersion       = "leaderrunversion"
	// mdClaim is a random nonce per Acquire call, written with the claim:
	// a claim that landed but whose answer was lost reads back as ours.
	mdClaim = "claim"
)

// newProperties parses what Get Blob Properties returned. Malformed values
// read as absent: status must show what it can.
func newProperties(state State, raw map[string]string, date time.Time) *Properties {
	md := make(map[string]string, len(raw))
	for k, v := range raw {
		md[strings.ToLower(k)] = v
	}
	p := &Properties{Exists: true, State: state, Metadata: md, Date: date}
	p.Holder = md[mdHolder]
	p.Term, _ = parseTerm(md[mdTerm])
	if s, err := strconv.Atoi(md[mdLeaseDuration]); err == nil && s > 0 {
		p.LeaseDuration = time.Duration(s) * time.Second
	}
	p.AcquiredAt = parseTime(md[mdAcquiredAt])
	p.Directory = isDirectory(md)
	p.Schedule, p.Occurrence = md[mdSchedule], parseTime(md[mdOccurrence])
	if start := parseTime(md[mdLastRunStart]); !start.IsZero() {
		r := &RunRecord{Holder: md[mdLastRunHolder], Start: start, End: parseTime(md[mdLastRunEnd])}
		if code, err := strconv.Atoi(md[mdLastExit]); err == nil {
			r.ExitCode = &code
		}
		p.LastRun = r
	}
	return p
}

// parseTerm reads the stored fencing token: "" is 0; anything but a
// non-negative decimal integer is an error, because a guessed term could go
// backwards.
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

// withinWindow reports whether p records a run that started less than
// window ago by the service's clock (p.Date). Without a Date or a recorded
// start it cannot tell, and says no.
func withinWindow(p *Properties, window time.Duration) bool {
	if window <= 0 || p == nil || p.LastRun == nil || p.Date.IsZero() {
		return false
	}
	return p.Date.Sub(p.LastRun.Start) < window
}

func skipError(p *Properties, window time.Duration) *SkipError {
	return &SkipError{Holder: p.LastRun.Holder, Start: p.LastRun.Start, Window: window}
}

// mergeMetadata returns old with the keys of add set, all lowercased.
func mergeMetadata(old, add map[string]string) map[string]string {
	md := make(map[string]string, len(old)+len(add))
	for k, v := range old {
		md[strings.ToLower(k)] = v
	}
	maps.Copy(md, add)
	return md
}
