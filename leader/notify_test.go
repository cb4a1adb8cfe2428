package leader

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// listenNotify stands in for systemd: a unixgram socket that NOTIFY_SOCKET
// points at.
func listenNotify(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return conn
}

func readNotify(t *testing.T, conn *net.UnixConn, within time.Duration) (string, bool) {
	t.Helper()
	buf := make([]byte, 4096)
	_ = conn.SetReadDeadline(time.Now().Add(within))
	n, err := conn.Read(buf)
	if err != nil {
		return "", false
	}
	return string(buf[:n]), true
}

func TestNotifierStatusAndReady(t *testing.T) {
	conn := listenNotify(t)
	t.Setenv("WATCHDOG_USEC", "")
	n := newNotifier(hclog.NewNullLogger())
	n.start()
	defer n.close()
	if got, _ := readNotify(t, conn, 5*time.Second); got != "READY=1" {
		t.Fatalf("first message %q, want READY=1", got)
	}
	n.status("waiting: held by vm-3 since 2026-11-23T03:00:00Z")
	if got, _ := readNotify(t, conn, 5*time.Second); got != "STATUS=waiting: held by vm-3 since 2026-11-23T03:00:00Z" {
		t.Fatalf("got %q", got)
	}
	n.status("leader: term 42\nsince now")
	if got, _ := readNotify(t, conn, 5*time.Second); got != "STATUS=leader: term 42 since now" {
		t.Fatalf("newlines must not split a STATUS: got %q", got)
	}
}

func TestNotifierWatchdogOnlyWhileRenewing(t *testing.T) {
	conn := listenNotify(t)
	t.Setenv("WATCHDOG_USEC", "100000") // 100 ms: a ping every 50 ms while healthy
	t.Setenv("WATCHDOG_PID", "")
	n := newNotifier(hclog.NewNullLogger())
	if n.watchdog != 100*time.Millisecond {
		t.Fatalf("watchdog %s, want 100ms", n.watchdog)
	}
	n.waiting()
	n.start()
	defer n.close()
	if got, _ := readNotify(t, conn, 5*time.Second); got != "READY=1" {
		t.Fatalf("first message %q, want READY=1", got)
	}
	if got, ok := readNotify(t, conn, 5*time.Second); !ok || got != "WATCHDOG=1" {
		t.Fatalf("a waiting follower pings the watchdog: got %q", got)
	}

	// Leading with renewals that stopped long ago: no pings.
	n.leading(time.Nanosecond) // older than that by the next tick, 50 ms on
	drainUntilQuiet(conn)
	if got, ok := readNotify(t, conn, 300*time.Millisecond); ok {
		t.Fatalf("pinged %q although the lease was not renewed", got)
	}

	// A renewal makes it ping again.
	n.leading(time.Hour)
	n.renewed()
	if got, ok := readNotify(t, conn, 5*time.Second); !ok || got != "WATCHDOG=1" {
		t.Fatalf("after a renewal: got %q", got)
	}
}

// drainUntilQuiet reads what was already queued.
func drainUntilQuiet(conn *net.UnixConn) {
	buf := make([]byte, 4096)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(120 * time.Millisecond))
		if _, err := conn.Read(buf); err != nil {
			return
		}
	}
}

func TestNotifierDisabledWithoutSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n := newNotifier(hclog.NewNullLogger())
	if n.enabled {
		t.Fatal("enabled without NOTIFY_SOCKET")
	}
	n.start()
	n.status("x")
	n.close()
	n.close() // idempotent
}

func TestWithoutNotify(t *testing.T) {
	env := []string{"PATH=/bin", "NOTIFY_SOCKET=/run/x", "WATCHDOG_USEC=1", "WATCHDOG_PID=2", "NOTIFY_SOCKETS=keep"}
	got := strings.Join(withoutNotify(env), " ")
	if got != "PATH=/bin NOTIFY_SOCKETS=keep" {
		t.Fatalf("got %q", got)
	}
}
