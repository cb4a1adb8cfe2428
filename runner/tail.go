package runner

// tail: the last bytes written, kept in a ring of a fixed size. The health
// check's output and COMMAND's (Output) are kept in one.

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// tail keeps the last bytes written to it, at most the size it was made
// with, whatever the sizes of the writes. It is safe for concurrent use.
type tail struct {
	mu      sync.Mutex
	ring    []byte // oldest at head once full
	head    int    // where the next byte goes
	full    bool   // the ring has wrapped
	written int64  // every byte written
}

func newTail(size int) *tail { return &tail{ring: make([]byte, size)} }

// Write keeps p's end; it never fails.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.written += int64(len(p))
	b := p
	if len(b) > len(t.ring) {
		b = b[len(b)-len(t.ring):]
	}
	for len(b) > 0 {
		n := copy(t.ring[t.head:], b)
		b = b[n:]
		if t.head += n; t.head == len(t.ring) {
			t.head, t.full = 0, true
		}
	}
	return len(p), nil
}

// Bytes returns a copy of what is kept, oldest first, and how many bytes
// were written in all.
func (t *tail) Bytes() ([]byte, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.full {
		return append([]byte(nil), t.ring[:t.head]...), t.written
	}
	return append(append(make([]byte, 0, len(t.ring)), t.ring[t.head:]...), t.ring[:t.head]...), t.written
}

// String returns what is kept as text: without a partial character at a
// front that was cut, surrounding white space trimmed.
func (t *tail) String() string {
	b, written := t.Bytes()
	if written > int64(len(b)) {
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.TrimSpace(string(b))
}
