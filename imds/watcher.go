package imds

// The watcher: polls the events and keeps the one that concerns this VM.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Poll intervals. The service allows about 5 requests per second per VM
// (a poll makes one request, two until the VM's name is known); the
// contract asks for a poll at least every 2 s.
const (
	DefaultPollInterval = time.Second
	MinPollInterval     = 200 * time.Millisecond
	MaxPollInterval     = 2 * time.Second
)

// ErrBadInterval is returned by NewWatcher for a poll interval outside
// MinPollInterval..MaxPollInterval.
var ErrBadInterval = errors.New("imds: poll interval must be between 200ms and 2s")

// WatcherConfig configures a Watcher.
type WatcherConfig struct {
	// PollInterval is the time from the start of one poll to the start of
	// the next (a poll that takes longer is followed at once); 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Logger receives the watcher's lines; nil logs nothing. It is
	// Named("imds").
	Logger hclog.Logger
}

// Watcher polls the scheduled events for this VM. It never approves an
// event, and an unreachable or failing service is never an event: it logs
// one warning when the service starts failing, polls on quietly (debug
// lines), and one info line when it answers again; meanwhile the last
// answer stands (before the first answer no event is known). Its methods
// are safe for concurrent use.
type Watcher struct {
	c        *Client
	interval time.Duration
	log      hclog.Logger
	running  atomic.Bool

	ready     chan struct{} // closed after the first poll, answered or not
	readyOnce sync.Once

	mu         sync.Mutex
	vm         string
	doc        Document
	haveDoc    bool
	pending    Event
	hasPending bool
	appear     chan struct{} // closed (and replaced) when an event appears
}

// NewWatcher checks cfg and returns a watcher that polls through c. It makes
// no request until Run.
func NewWatcher(c *Client, cfg WatcherConfig) (*Watcher, error) {
	if c == nil {
		return nil, errors.New("imds: NewWatcher needs a Client")
	}
	interval := cfg.PollInterval
	if interval == 0 {
		interval = DefaultPollInterval
	}
	if interval < MinPollInterval || interval > MaxPollInterval {
		return nil, fmt.Errorf("%w: got %s", ErrBadInterval, interval)
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Watcher{
		c:        c,
		interval: interval,
		log:      log.Named("imds"),
		ready:    make(chan struct{}),
		appear:   make(chan struct{}),
	}, nil
}

// Run polls until ctx is done, then returns ctx.Err(). It first asks for
// this VM's name, on every poll until it has it, then for the events on
// every poll. Run may be called once; a second call returns an error at once.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("imds: Watcher.Run called twice")
	}
	defer w.markReady()
	failing := false
	for {
		start := time.Now()
		err := w.poll(ctx)
		w.markReady()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case err != nil && !failing:
			failing = true
			w.log.Warn("metadata service unavailable: going on without scheduled events until it answers",
				"endpoint", w.c.Endpoint(), "error", err)
		case err != nil:
			w.log.Debug("metadata service still unavailable", "error", err)
		case failing:
			failing = false
			w.log.Info("metadata service answering again", "endpoint", w.c.Endpoint())
		}
		t := time.NewTimer(time.Until(start.Add(w.interval)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// poll asks for the VM's name if it is not known yet, then for the events.
func (w *Watcher) poll(ctx context.Context) error {
	if w.VMName() == "" {
		name, err := w.c.VMName(ctx)
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.vm = name
		w.mu.Unlock()
		w.log.Info("watching scheduled events", "vm", name, "endpoint", w.c.Endpoint(), "poll_interval", w.interval)
	}
	doc, err := w.c.Events(ctx)
	if err != nil {
		return err
	}
	w.apply(doc, time.Now())
	return nil
}

// apply takes a new answer: when it is news (Changed), it recomputes the
// pending event, wakes Appeared's channel if one has appeared, and logs the
// change once (never on every poll).
func (w *Watcher) apply(doc Document, now time.Time) {
	w.mu.Lock()
	if !Changed(w.doc, w.haveDoc, doc) {
		w.mu.Unlock()
		return
	}
	w.doc, w.haveDoc = doc, true
	prev, had := w.pending, w.hasPending
	w.pending, w.hasPending = doc.Earliest(w.vm, now)
	ev, has := w.pending, w.hasPending
	if has && !had {
		close(w.appear)
		w.appear = make(chan struct{})
	}
	w.mu.Unlock()

	w.log.Info("scheduled events changed", "incarnation", doc.DocumentIncarnation, "events", len(doc.Events))
	switch {
	case has && (!had || prev.EventID != ev.EventID):
		w.log.Info("scheduled event concerns this VM", "type", ev.EventType, "event_id", ev.EventID,
			"status", ev.EventStatus, "not_before", ev.NotBeforeText)
		if ev.NotBeforeMalformed() {
			w.log.Warn("unreadable NotBefore: taking the event as due now",
				"event_id", ev.EventID, "not_before", ev.NotBeforeText)
		}
	case !has && had:
		w.log.Info("scheduled event no longer pending", "type", prev.EventType, "event_id", prev.EventID)
	}
}

func (w *Watcher) markReady() { w.readyOnce.Do(func() { close(w.ready) }) }

// Ready is closed once the first poll has ended, with an answer about the
// events or without one (the service unreachable, slow or failing), and when
// Run returns. A caller waits on it for a bounded time only: the first poll
// can take up to two request timeouts.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// VMName is this VM's name, or "" while the service has not given it.
func (w *Watcher) VMName() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.vm
}

// Pending returns the event that concerns this VM and may start first (see
// Document.Earliest) as of the last answer, and whether there is one.
func (w *Watcher) Pending() (Event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending, w.hasPending
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Appeared returns a channel that is closed as soon as an event concerns
// this VM: at once if one is pending now, otherwise when one appears after
// the call. Call it when it starts to matter (a leader, on acquiring) and
// read Pending for the event.
func (w *Watcher) Appeared() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hasPending {
		return closedChan
	}
	return w.appear
}
