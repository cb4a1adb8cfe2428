package imds

// The event model: the scheduled-events document as the service sends it,
// and the pure rules that decide which events concern this VM.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Event types that take the VM away (or pause it) and so concern a leader.
const (
	TypeReboot    = "Reboot"
	TypeRedeploy  = "Redeploy"
	TypeFreeze    = "Freeze"
	TypePreempt   = "Preempt"
	TypeTerminate = "Terminate"
)

// Event statuses. An event that is neither Scheduled nor Started (for
// example Completed or Canceled) concerns nobody.
const (
	StatusScheduled = "Scheduled"
	StatusStarted   = "Started"
)

var concerningTypes = []string{TypeReboot, TypeRedeploy, TypeFreeze, TypePreempt, TypeTerminate}

// Document is one answer of the scheduled-events endpoint.
type Document struct {
	// DocumentIncarnation changes whenever the service changes the events.
	DocumentIncarnation int
	Events              []Event
}

// Event is one scheduled event, as the service describes it.
type Event struct {
	EventID      string // "EventId" on the wire
	EventType    string // Reboot, Redeploy, Freeze, Preempt, Terminate, …
	ResourceType string // "VirtualMachine"
	Resources    []string
	EventStatus  string // Scheduled, Started, …

	// NotBefore is when the platform may start the event, in UTC. It is
	// zero when the service gave none (it sends "" once the event has
	// Started) and when the value could not be parsed: in both cases the
	// event may start at any moment, and StartsBy returns now. A value that
	// cannot be read is never taken for a time in the far future.
	NotBefore time.Time
	// NotBeforeText is NotBefore exactly as the service sent it, for logs.
	NotBeforeText string

	Description       string
	EventSource       string // Platform or User
	DurationInSeconds int    // -1 when unknown
}

// wireEvent is the service's JSON for an Event.
type wireEvent struct {
	EventID           string   `json:"EventId"`
	EventType         string   `json:"EventType"`
	ResourceType      string   `json:"ResourceType"`
	Resources         []string `json:"Resources"`
	EventStatus       string   `json:"EventStatus"`
	NotBefore         string   `json:"NotBefore"`
	Description       string   `json:"Description"`
	EventSource       string   `json:"EventSource"`
	DurationInSeconds *int     `json:"DurationInSeconds"`
}

type wireDocument struct {
	DocumentIncarnation *int        `json:"DocumentIncarnation"`
	Events              []wireEvent `json:"Events"`
}

// parseDocument decodes the service's JSON. A document without a
// DocumentIncarnation is refused (it is how the service tells one answer
// from the next); an event's unreadable NotBefore is not an error (see
// Event.NotBefore).
func parseDocument(body []byte) (Document, error) {
	var w wireDocument
	if err := json.Unmarshal(body, &w); err != nil {
		return Document{}, fmt.Errorf("%w: %w", ErrBadAnswer, err)
	}
	if w.DocumentIncarnation == nil {
		return Document{}, fmt.Errorf("%w: no DocumentIncarnation", ErrBadAnswer)
	}
	d := Document{DocumentIncarnation: *w.DocumentIncarnation}
	for _, we := range w.Events {
		e := Event{
			EventID:           we.EventID,
			EventType:         we.EventType,
			ResourceType:      we.ResourceType,
			Resources:         we.Resources,
			EventStatus:       we.EventStatus,
			NotBeforeText:     we.NotBefore,
			NotBefore:         ParseNotBefore(we.NotBefore),
			Description:       we.Description,
			EventSource:       we.EventSource,
			DurationInSeconds: -1,
		}
		if we.DurationInSeconds != nil {
			e.DurationInSeconds = *we.DurationInSeconds
		}
		d.Events = append(d.Events, e)
	}
	return d, nil
}

// ParseNotBefore reads a NotBefore value, RFC 1123 in GMT ("Mon, 19 Sep
// 2016 18:29:47 GMT"; the other HTTP date forms are accepted too). It
// returns the zero time for an empty or unreadable value, which callers
// read as "may start at any moment", never as "far in the future".
func ParseNotBefore(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	t, err := http.ParseTime(s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// NotBeforeMalformed reports whether the service sent a NotBefore that
// could not be read (and so is treated as "now").
func (e Event) NotBeforeMalformed() bool {
	return e.NotBefore.IsZero() && strings.TrimSpace(e.NotBeforeText) != ""
}

// StartsBy is the latest moment the event may start, as far as this host
// can tell: NotBefore, or now when NotBefore is zero (empty once Started, or
// unreadable). It may be in the past.
func (e Event) StartsBy(now time.Time) time.Time {
	if e.NotBefore.IsZero() {
		return now
	}
	return e.NotBefore
}

// Concerns reports whether the event concerns the VM named vm: its
// Resources name the VM (compared without regard to case), its EventType
// takes the VM away (Reboot, Redeploy, Freeze, Preempt, Terminate) and its
// EventStatus is Scheduled or Started. An empty vm concerns nothing.
func (e Event) Concerns(vm string) bool {
	vm = strings.TrimSpace(vm)
	if vm == "" {
		return false
	}
	if !slices.Contains(concerningTypes, e.EventType) {
		return false
	}
	if e.EventStatus != StatusScheduled && e.EventStatus != StatusStarted {
		return false
	}
	return slices.ContainsFunc(e.Resources, func(r string) bool {
		return strings.EqualFold(strings.TrimSpace(r), vm)
	})
}

// Earliest returns the concerning event for vm that may start first (see
// Event.StartsBy; one without a NotBefore comes first), and whether there is
// one. Of events that may start at the same moment, the first listed wins.
func (d Document) Earliest(vm string, now time.Time) (Event, bool) {
	var best Event
	found := false
	for _, e := range d.Events {
		if !e.Concerns(vm) {
			continue
		}
		if !found || e.StartsBy(now).Before(best.StartsBy(now)) {
			best, found = e, true
		}
	}
	return best, found
}

// Changed reports whether next is news after prev: it is the first answer
// (hadPrev false) or its DocumentIncarnation differs. The service changes
// the incarnation whenever it changes the events, so an answer with the same
// incarnation repeats the previous one.
func Changed(prev Document, hadPrev bool, next Document) bool {
	return !hadPrev || prev.DocumentIncarnation != next.DocumentIncarnation
}
