package leader

// Scheduled Events (--scheduled-events): the watcher of Azure's metadata
// service, the reason a contender holds off its acquire, and the deadline
// by which a leader that steps down kills COMMAND.

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/imds"
)

// eventsReadyWait bounds how long the first acquire waits for the first
// answer about events: the first request after a VM boots may take minutes,
// and a run must never wait for it.
const eventsReadyWait = 2 * time.Second

// stepDownMargin: a leader that steps down has COMMAND killed no later
// than this long before the event's NotBefore.
const stepDownMargin = 2 * time.Second

// startEvents starts the watcher of c (nil without c), and waits
// until its first poll has ended, at most eventsReadyWait: without an answer
// by then the run goes on and events apply as soon as they arrive. stop ends
// the watcher and waits for it. Failures to reach the service are the
// watcher's to log (one warning); they never stop a run.
func startEvents(ctx context.Context, log hclog.Logger, c *imds.Client) (w *imds.Watcher, stop func(), err error) {
	if c == nil {
		return nil, func() {}, nil
	}
	if w, err = imds.NewWatcher(c, imds.WatcherConfig{Logger: log}); err != nil {
		return nil, nil, exit.With(exit.Internal, err)
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(wctx) // returns wctx.Err() once stopped
	}()
	select {
	case <-w.Ready():
	case <-ctx.Done():
	case <-time.After(eventsReadyWait):
		log.Info("no answer about scheduled events yet; going on, and applying them as soon as they arrive",
			"waited", eventsReadyWait)
	}
	return w, func() { cancel(); <-done }, nil
}

// holdFunc is lease.WaitOptions.Hold, nil without a watcher: the reason
// not to acquire while an event concerns this VM, "" otherwise. It reads
// the watcher's last answer only (no I/O).
func holdFunc(w *imds.Watcher) func() string {
	if w == nil {
		return nil
	}
	return func() string {
		if ev, ok := w.Pending(); ok {
			return eventText(ev)
		}
		return ""
	}
}

// eventText names an event for this VM: its type, id and when it may start.
// It is also the reason a contender holds off.
func eventText(ev imds.Event) string {
	s := "scheduled event " + ev.EventType + " " + ev.EventID + " for this VM"
	switch {
	case ev.NotBeforeText == "":
		s += " (" + ev.EventStatus + ", may start at any moment)"
	case ev.NotBeforeMalformed():
		s += fmt.Sprintf(" at %q (unreadable: taken as now)", ev.NotBeforeText)
	default:
		s += " at " + ev.NotBeforeText
	}
	return s
}

// stepDownKillBy is when a leader stepping down for ev sends SIGKILL at
// the latest: killGrace after now, but no later than stepDownMargin before
// the event may start (imds.Event.StartsBy). Computed once, from the wall
// clocks' distance to NotBefore, it carries now's monotonic reading: later
// changes of the wall clock do not move it. When that is not after now
// (NotBefore within the margin, past, empty or unreadable) it is now: the
// platform may take or pause the VM at any moment, and a COMMAND frozen with
// the VM would run on past the lease when it wakes, so it is killed at once,
// without the stop signal it would have no time to act on.
func stepDownKillBy(ev imds.Event, now time.Time, killGrace time.Duration) time.Time {
	grace := min(killGrace, ev.StartsBy(now).Sub(now)-stepDownMargin)
	if grace <= 0 {
		return now
	}
	return now.Add(grace)
}
