package leader

// systemd: READY, STATUS lines and the watchdog, for a run under a unit.

import (
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/hashicorp/go-hclog"
)

// notifier reports to systemd when NOTIFY_SOCKET is set, and otherwise does
// nothing: READY=1 at start, STATUS= lines as leadership changes, and with
// WATCHDOG_USEC, WATCHDOG=1 only while the lease is being renewed, so a
// wedged keeper gets the unit restarted.
type notifier struct {
	log      hclog.Logger
	enabled  bool
	watchdog time.Duration // 0: no watchdog

	mu     sync.Mutex
	lastOK time.Time     // last successful renewal, monotonic
	maxAge time.Duration // 0: ping without condition (waiting)
	stop   chan struct{}
	closed sync.Once
}

// notifyEnv are the variables that address systemd; they are removed from
// COMMAND's environment so that COMMAND's own messages cannot speak for
// leaderrun (a child's WATCHDOG=1 would defeat the watchdog).
var notifyEnv = []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}

func newNotifier(log hclog.Logger) *notifier {
	n := &notifier{log: log.Named("systemd"), stop: make(chan struct{})}
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return n
	}
	n.enabled = true
	var err error
	if n.watchdog, err = daemon.SdWatchdogEnabled(false); err != nil { // 0 then
		n.log.Warn("ignoring WATCHDOG_USEC", "error", err)
	}
	return n
}

func (n *notifier) send(state string) {
	if !n.enabled {
		return
	}
	if _, err := daemon.SdNotify(false, state); err != nil {
		n.log.Debug("sd_notify failed", "error", err)
	}
}

func (n *notifier) status(format string) {
	n.send("STATUS=" + strings.ReplaceAll(format, "\n", " "))
}

// waiting makes the watchdog ping on every tick (maxAge 0): a follower has
// no renewals, and its polls give up by themselves (exit 69) when storage is
// unreachable.
func (n *notifier) waiting() { n.leading(0) }

// leading makes the watchdog ping only while the last successful renewal
// (or the acquisition) is younger than maxAge.
func (n *notifier) leading(maxAge time.Duration) {
	n.mu.Lock()
	n.lastOK, n.maxAge = time.Now(), maxAge
	n.mu.Unlock()
}

func (n *notifier) renewed() {
	n.mu.Lock()
	n.lastOK = time.Now()
	n.mu.Unlock()
}

// healthy says whether the watchdog may be pinged now.
func (n *notifier) healthy() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.maxAge == 0 || time.Since(n.lastOK) <= n.maxAge
}

// start sends READY=1 and pings the watchdog every half period while
// healthy; close stops it.
func (n *notifier) start() {
	n.send("READY=1")
	if !n.enabled || n.watchdog <= 0 {
		return
	}
	go func() {
		t := time.NewTicker(n.watchdog / 2)
		defer t.Stop()
		for {
			select {
			case <-n.stop:
				return
			case <-t.C:
				if n.healthy() {
					n.send("WATCHDOG=1")
				} else {
					n.log.Warn("not pinging the systemd watchdog: the lease has not been renewed recently")
				}
			}
		}
	}()
}

func (n *notifier) close() { n.closed.Do(func() { close(n.stop) }) }

// withoutNotify returns env without the variables that address systemd.
func withoutNotify(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, ok := strings.Cut(kv, "=")
		return ok && slices.Contains(notifyEnv, k)
	})
}
