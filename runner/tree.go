//go:build unix

package runner

import (
	"time"

	"golang.org/x/sys/unix"
)

// kill sends SIGKILL to the command's processes (tree_linux.go,
// tree_other.go), again while one of them runs, and waits, at most
// killWait, until none does; it reports whether they all went.
func (t tree) kill() bool {
	_ = t.signal(unix.SIGKILL)
	at := time.Now()
	return awaitEmpty(t, func() time.Time { return at }, func() { _ = t.signal(unix.SIGKILL) })
}
