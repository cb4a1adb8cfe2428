package leader

// Telling monitoring (package monitor): pings from the host that runs
// COMMAND, and the textfile of gauges that every invocation updates, both
// off the run loop's path.

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/monitor"
)

// pingWait bounds the wait for the last ping once the lease is released:
// one try and a retry. leaderrun exits then, whatever the ping does.
const pingWait = monitor.PingTryTimeout + monitor.PingRetryWait

// textfileWait bounds the wait for the textfile's writes when leaderrun is
// about to exit (after the release, or at a skip): the lock's wait
// (monitor.TextfileLockWait, 1 s) and a second for a local write, which
// takes milliseconds. A write still going then (a hung file system) is
// left behind, with one WARNING.
const textfileWait = monitor.TextfileLockWait + time.Second

// runMonitor is one invocation's monitoring; its zero value (no flags)
// does nothing. Its methods are called from the run flow's goroutine.
type runMonitor struct {
	log         hclog.Logger
	lease       string
	pinger      *monitor.Pinger // nil without --ping-url / --ping-url-template
	metricsFile string          // "" without --metrics-file
	start       time.Time
	warnOnce    sync.Once // one WARNING for the textfile

	// writeTextfile is monitor.WriteTextfile; tests put a slow one in.
	writeTextfile func(path string, r monitor.Run, log hclog.Logger) error
	written       chan struct{} // closed when the last write asked for is over; nil: none asked
}

func newRunMonitor(log hclog.Logger, o *Options) *runMonitor {
	if o.Pinger != nil {
		o.Pinger.SetLogger(log)
	}
	return &runMonitor{log: log, lease: o.Client.Name(), metricsFile: o.MetricsFile, pinger: o.Pinger,
		writeTextfile: monitor.WriteTextfile}
}

// invoked: this invocation ran nothing (skipped, or the lease held): no
// ping, so that silence means nobody ran; the textfile records it, within
// textfileWait: leaderrun exits next.
func (m *runMonitor) invoked() {
	m.write(monitor.Run{Invocation: time.Now()})
	m.waitTextfile()
}

// started: COMMAND has started on this host under l. Neither the ping nor
// the textfile is waited for.
func (m *runMonitor) started(l *lease.Lease) {
	m.start = time.Now()
	if m.pinger != nil {
		m.pinger.Start()
	}
	m.write(monitor.Run{Invocation: m.start, Start: m.start})
}

// ended: COMMAND's run is over; code is what leaderrun exits with, output
// the end of what COMMAND wrote (nil: none kept), the end ping's body
// after the summary line. The ping and the textfile are written in the
// background: recording the end, the stop and the release never wait for
// them.
func (m *runMonitor) ended(l *lease.Lease, code int, output []byte) {
	end := time.Now()
	if m.pinger != nil {
		m.pinger.Finish(code, fmt.Sprintf("holder=%s term=%d duration=%s exit=%d rid=%s\n",
			l.Identity, l.Term, end.Sub(m.start).Round(time.Millisecond), code, m.pinger.RunID()), output)
	}
	m.write(monitor.Run{End: end, ExitCode: &code})
}

// wait gives the textfile up to textfileWait, and the last ping up to
// pingWait in all, once the lease is released.
func (m *runMonitor) wait() {
	deadline := time.Now().Add(pingWait)
	m.waitTextfile()
	if m.pinger != nil && !m.pinger.Wait(time.Until(deadline)) {
		m.log.Debug("the last ping is still in flight; leaderrun exits without it")
	}
}

// write asks for r to be written to the textfile, in the background and
// in the order asked: each write starts once the one before is over.
func (m *runMonitor) write(r monitor.Run) {
	if m.metricsFile == "" {
		return
	}
	r.Lease = m.lease
	before, done := m.written, make(chan struct{})
	m.written = done
	go func() {
		defer close(done)
		if before != nil {
			<-before
		}
		if err := m.writeTextfile(m.metricsFile, r, m.log); err != nil {
			m.warn("could not write the metrics file; leaderrun's exit status is unchanged", "error", err)
		}
	}()
}

// waitTextfile waits for the writes asked for, at most textfileWait.
func (m *runMonitor) waitTextfile() {
	if m.written == nil {
		return
	}
	select {
	case <-m.written:
	case <-time.After(textfileWait):
		m.warn("the metrics file is still being written; leaderrun goes on without it", "waited", textfileWait)
	}
}

func (m *runMonitor) warn(msg string, args ...any) {
	m.warnOnce.Do(func() { m.log.Warn(msg, args...) })
}
