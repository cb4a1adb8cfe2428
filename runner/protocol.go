//go:build unix

package runner

// What leaderrun and the guard say through their pipes: Launch's go-ahead
// (the command's kill deadline and environment) and the command's wait
// status reported back. Later kill deadlines travel on the lifeline
// (Process.SetKillDeadline). Both read the same monotonic clock.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The go-ahead that Launch sends to the guard: a header of the kill deadline
// (big-endian int64, a system monotonic clock reading in nanoseconds; 0 for
// none), the number of environment entries and their total size (big-endian
// uint32 each), then each entry followed by a NUL. Any content but NUL
// (which execve cannot pass either) survives, and a message cut short (by
// leaderrun's death while writing it) is told from a whole one.
const (
	launchHeader = 16
	// maxLaunchSize bounds what the guard accepts, far above what execve
	// takes on any system.
	maxLaunchSize = 1 << 28
)

func encodeLaunch(deadline int64, env []string) ([]byte, error) {
	size := 0
	for i, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, fmt.Errorf("environment entry %d contains NUL", i)
		}
		size += len(kv) + 1
	}
	if size > maxLaunchSize {
		return nil, fmt.Errorf("environment too large: %d bytes", size)
	}
	msg := make([]byte, launchHeader, launchHeader+size)
	binary.BigEndian.PutUint64(msg[0:], uint64(deadline))
	binary.BigEndian.PutUint32(msg[8:], uint32(len(env)))
	binary.BigEndian.PutUint32(msg[12:], uint32(size))
	for _, kv := range env {
		msg = append(msg, kv...)
		msg = append(msg, 0)
	}
	return msg, nil
}

// decodeLaunch reads a go-ahead. It returns io.EOF when r ended before any
// of it, io.ErrUnexpectedEOF when it ended in the middle. The environment
// is never nil.
func decodeLaunch(r io.Reader) (deadline int64, env []string, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var head [launchHeader]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return 0, nil, err
	}
	deadline = int64(binary.BigEndian.Uint64(head[0:]))
	count := binary.BigEndian.Uint32(head[8:])
	size := binary.BigEndian.Uint32(head[12:])
	if size > maxLaunchSize || count > size {
		return 0, nil, fmt.Errorf("malformed go-ahead: %d entries in %d bytes", count, size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(br, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	env = make([]string, 0, count)
	if size > 0 {
		if body[size-1] != 0 {
			return 0, nil, errors.New("malformed go-ahead: unterminated entry")
		}
		env = strings.Split(string(body[:size-1]), "\x00")
	}
	if len(env) != int(count) {
		return 0, nil, fmt.Errorf("malformed go-ahead: %d entries, %d announced", len(env), count)
	}
	return deadline, env, nil
}

// formatStatus and parseStatus carry a wait status from the guard to
// leaderrun: "exit N" or "signal N".
func formatStatus(code int, sig syscall.Signal) string {
	if sig != 0 {
		return "signal " + strconv.Itoa(int(sig)) + "\n"
	}
	return "exit " + strconv.Itoa(code) + "\n"
}

func parseStatus(line string) (Result, bool) {
	kind, num, _ := strings.Cut(strings.TrimSpace(line), " ")
	n, err := strconv.Atoi(num)
	if err != nil {
		return Result{}, false
	}
	switch kind {
	case "exit":
		return Result{ExitCode: n}, true
	case "signal":
		return Result{ExitCode: -1, Signal: syscall.Signal(n)}, true
	}
	return Result{}, false
}

// monotonicNow reads the system-wide monotonic clock, in nanoseconds: the
// kill deadline travels as one of its readings, which the guard shares.
func monotonicNow() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// monotonicAt is t as a reading of the system's monotonic clock, never
// below 1: a time long past (the zero time, whose distance saturates) reads
// as just after the clock's origin, so the guard's subtraction cannot wrap
// it into the far future, and it is never 0, which the guard's protocol
// reads as no deadline.
func monotonicAt(t time.Time) (int64, error) {
	now, err := monotonicNow()
	if err != nil {
		return 0, err
	}
	return max(now+int64(time.Until(t)), 1), nil
}

// untilMonotonic is how long until a system monotonic clock reading.
func untilMonotonic(at int64) time.Duration {
	now, err := monotonicNow()
	if err != nil {
		return 0
	}
	return time.Duration(at - now)
}
