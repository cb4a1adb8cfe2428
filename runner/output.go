//go:build unix

package runner

// Keeping the end of COMMAND's output: its stdout and stderr go through
// pipes that leaderrun reads, passing every byte on to where they went
// before and keeping the last bytes, interleaved as written.

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"golang.org/x/sys/unix"
)

// Output passes what COMMAND writes to its stdout and stderr on to where
// they go (leaderrun's own) and keeps the last bytes of it. Give Stdout and
// Stderr to Config (Prepare, Start); once the command is Done, Close. Its
// methods are safe for concurrent use.
//
// Promises and limits:
//   - Every byte is passed on, in order, to the file it was written to. When
//     that file's reader has gone (a closed pipe: `leaderrun … | head -1`),
//     the pipe COMMAND writes to is closed too, so COMMAND gets SIGPIPE (or
//     EPIPE) as it would have without leaderrun between.
//   - When stdout and stderr are one and the same file (one pipe, socket or
//     open file: cron's mail, journald, `>log 2>&1`), COMMAND gets one pipe
//     for both and the kept bytes are in the exact order written. Otherwise
//     it gets one each, kept in the order leaderrun reads them: writes to
//     both within the same instant may be kept in another order.
//   - COMMAND's stdout and stderr are pipes, never a terminal: keep the
//     output only when neither of leaderrun's is one (Terminal), so that an
//     interactive COMMAND keeps its terminal.
//   - leaderrun passes the bytes on as it reads them: while it cannot read
//     (stopped, starved), COMMAND blocks once a pipe is full (64 KiB), as it
//     blocks today on a reader that does not keep up.
type Output struct {
	stdout, stderr *os.File   // the write ends COMMAND gets; stderr may be stdout
	readers        []*os.File // the read ends, one per pipe
	read           sync.WaitGroup
	closed         sync.Once

	kept *tail
}

// Kept is what an Output kept of COMMAND's output.
type Kept struct {
	Bytes   []byte // the last bytes, at most the limit
	Written int64  // how many bytes COMMAND wrote in all
}

// Terminal reports whether f is a terminal.
func Terminal(f *os.File) bool {
	is := false
	_ = control(f, func(fd int) { is = isatty.IsTerminal(uintptr(fd)) })
	return is
}

// KeepOutput starts passing COMMAND's output on to stdout and stderr,
// keeping the last limit bytes of it (limit > 0). A file it cannot read
// the identity of (closed, say) is an error: keep nothing then.
func KeepOutput(limit int, stdout, stderr *os.File) (*Output, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("runner: keep output: limit %d", limit)
	}
	same, err := sameFile(stdout, stderr)
	if err != nil {
		return nil, fmt.Errorf("runner: keep output: %w", err)
	}
	o := &Output{kept: newTail(limit)}
	pass := func(dst *os.File) (*os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		o.readers = append(o.readers, r)
		o.read.Go(func() { o.pass(r, dst) })
		return w, nil
	}
	if o.stdout, err = pass(stdout); err != nil {
		return nil, fmt.Errorf("runner: keep output: %w", err)
	}
	o.stderr = o.stdout
	if !same {
		if o.stderr, err = pass(stderr); err != nil {
			o.Close(0)
			return nil, fmt.Errorf("runner: keep output: %w", err)
		}
	}
	return o, nil
}

// Stdout and Stderr are COMMAND's stdout and stderr (Config's): the write
// ends of the pipes, one and the same when both go to the same file.
func (o *Output) Stdout() *os.File { return o.stdout }
func (o *Output) Stderr() *os.File { return o.stderr }

// pass copies r to dst and into the ring until r ends: every writer closed
// it, or Close closed it. When dst's reader has gone, r is closed, so that
// COMMAND's next write meets a closed pipe as it would have met dst.
func (o *Output) pass(r, dst *os.File) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = o.kept.Write(buf[:n])
			if _, werr := dst.Write(buf[:n]); errors.Is(werr, syscall.EPIPE) {
				r.Close()
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Kept returns what is kept so far.
func (o *Output) Kept() Kept {
	b, n := o.kept.Bytes()
	return Kept{Bytes: b, Written: n}
}

// Close closes leaderrun's write ends and waits, at most wait, until every
// writer has closed its own (COMMAND's processes are gone) and all it wrote
// is passed on; then it closes the read ends (a writer still there gets a
// closed pipe) and returns what is kept. Only the first call waits; later
// ones return what is kept.
func (o *Output) Close(wait time.Duration) Kept {
	o.closed.Do(func() {
		o.stdout.Close()
		o.stderr.Close() // the same file again when shared: closing twice is harmless
		done := make(chan struct{})
		go func() { o.read.Wait(); close(done) }()
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
		}
		for _, r := range o.readers {
			r.Close()
		}
	})
	return o.Kept()
}

// sameFile reports whether a and b are the same file: one device and inode.
func sameFile(a, b *os.File) (bool, error) {
	var sa, sb unix.Stat_t
	var ea, eb error
	if err := control(a, func(fd int) { ea = unix.Fstat(fd, &sa) }); err != nil {
		return false, err
	}
	if err := control(b, func(fd int) { eb = unix.Fstat(fd, &sb) }); err != nil {
		return false, err
	}
	if err := errors.Join(ea, eb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}

// control runs f on f's descriptor without f.Fd, which would put it in
// blocking mode.
func control(file *os.File, f func(fd int)) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { f(int(fd)) })
}
