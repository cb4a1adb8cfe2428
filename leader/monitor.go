package leader

// Telling monitoring (package monitor): pings from the host that runs
// COMMAND, and the textfile of gauges that every invocation updates.

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

// runMonitor is one invocation's monitoring; its zero value (no flags)
// does nothing.
type runMonitor struct {
	log         hclog.Logger
	lease       string
	pinger      *monitor.Pinger // nil without --ping-url / --ping-url-template
	metricsFile string          // "" without --metrics-file
	start       time.Time
	warnOnce    sync.Once
}

func newRunMonitor(log hclog.Logger, o *Options) *runMonitor {
	if o.Pinger != nil {
		o.Pinger.SetLogger(log)
	}
	return &runMonitor{log: log, lease: o.Client.Name(), metricsFile: o.MetricsFile, pinger: o.Pinger}
}

// invoked: this invocation ran nothing (skipped, or the lease held): no
// ping, so that silence means nobody ran; the textfile records it.
func (m *runMonitor) invoked() {
	m.write(monitor.Run{Invocation: time.Now()})
}

// started: COMMAND has started on this host under l.
func (m *runMonitor) started(l *lease.Lease) {
	m.start = time.Now()
	if m.pinger != nil {
		m.pinger.Start()
	}
	m.write(monitor.Run{Invocation: m.start, Start: m.start, Running: true})
}

// ended: COMMAND's run is over; code is what leaderrun exits with, output
// the end of what COMMAND wrote (nil: none kept), the end ping's body
// after the summary line. The ping goes out in the background: the stop
// and the release never wait for it.
func (m *runMonitor) ended(l *lease.Lease, code int, output []byte) {
	end := time.Now()
	if m.pinger != nil {
		m.pinger.Finish(code, fmt.Sprintf("holder=%s term=%d duration=%s exit=%d rid=%s\n",
			l.Identity, l.Term, end.Sub(m.start).Round(time.Millisecond), code, m.pinger.RunID()), output)
	}
	m.write(monitor.Run{End: end, ExitCode: &code})
}

// wait gives the last ping up to pingWait once the lease is released.
func (m *runMonitor) wait() {
	if m.pinger != nil && !m.pinger.Wait(pingWait) {
		m.log.Debug("the last ping is still in flight; leaderrun exits without it")
	}
}

func (m *runMonitor) write(r monitor.Run) {
	if m.metricsFile == "" {
		return
	}
	r.Lease = m.lease
	if err := monitor.WriteTextfile(m.metricsFile, r); err != nil {
		m.warnOnce.Do(func() {
			m.log.Warn("could not write the metrics file; leaderrun's exit status is unchanged", "error", err)
		})
	}
}
