//go:build unix

package runner

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// The ring keeps the last limit bytes whatever the sizes of the writes.
func TestOutputRing(t *testing.T) {
	for _, limit := range []int{1, 7, 64} {
		for _, chunk := range []int{1, 3, 7, 8, 64, 100} {
			o := &Output{kept: newTail(limit)}
			var all []byte
			for i := range 50 {
				b := bytes.Repeat([]byte{byte('a' + i%26)}, chunk)
				b[0] = byte('0' + i%10)
				_, _ = o.kept.Write(b)
				all = append(all, b...)
				want := all[max(0, len(all)-limit):]
				if k := o.Kept(); !bytes.Equal(k.Bytes, want) || k.Written != int64(len(all)) {
					t.Fatalf("limit %d, writes of %d, after %d: kept %q (%d written), want %q (%d)",
						limit, chunk, i+1, k.Bytes, k.Written, want, len(all))
				}
			}
		}
	}
}

// outputRun starts a "write" child of n lines through an Output of limit
// bytes, with stdout and stderr going to the files given, and returns what
// was kept once the command is done.
func outputRun(t *testing.T, limit, n int, stdout, stderr *os.File) (Kept, Result) {
	t.Helper()
	o, err := KeepOutput(limit, stdout, stderr)
	if err != nil {
		t.Fatal(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	p, err := Start(Config{Argv: []string{testExe}, Env: append(testEnv(), "RUNNER_TEST_CHILD=write", fmt.Sprintf("RUNNER_TEST_LINES=%d", n)),
		Stdin: devnull, Stdout: o.Stdout(), Stderr: o.Stderr(), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(within):
		p.Stop(0)
		t.Fatal("the command did not end")
	}
	return o.Close(within), p.Result()
}

func lines(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s %d\n", prefix, i)
	}
	return b.String()
}

// COMMAND's stdout and stderr still go where they went, every byte in
// order; the last bytes are kept. One file for both (journald, cron's mail,
// >log 2>&1): one pipe, so the bytes kept are in the exact order written.
func TestKeepOutputOneFile(t *testing.T) {
	t.Parallel()
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const n, limit = 2000, 1000
	k, res := outputRun(t, limit, n, f, f)
	if res.Code() != 0 {
		t.Fatalf("the command exited %d", res.Code())
	}
	var all strings.Builder
	for i := range n {
		fmt.Fprintf(&all, "out %d\nerr %d\n", i, i)
	}
	got, _ := os.ReadFile(f.Name())
	if string(got) != all.String() {
		t.Errorf("the file got %d bytes, not the %d written in order", len(got), all.Len())
	}
	if want := all.String()[all.Len()-limit:]; string(k.Bytes) != want || k.Written != int64(all.Len()) {
		t.Errorf("kept %d bytes ending %q (%d written), want the last %d in order (%d written)",
			len(k.Bytes), k.Bytes[max(0, len(k.Bytes)-20):], k.Written, limit, all.Len())
	}
}

// Two files: each gets its own stream, whole and in order; both are kept.
func TestKeepOutputTwoFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := os.Create(dir + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errf, err := os.Create(dir + "/err")
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	const n = 500
	k, res := outputRun(t, 1<<20, n, out, errf)
	if res.Code() != 0 {
		t.Fatalf("the command exited %d", res.Code())
	}
	gotOut, _ := os.ReadFile(out.Name())
	gotErr, _ := os.ReadFile(errf.Name())
	if string(gotOut) != lines("out", n) || string(gotErr) != lines("err", n) {
		t.Errorf("stdout got %d bytes, stderr %d: not each stream whole and in order", len(gotOut), len(gotErr))
	}
	if int(k.Written) != len(gotOut)+len(gotErr) || len(k.Bytes) != len(gotOut)+len(gotErr) {
		t.Errorf("kept %d of %d written, want all %d", len(k.Bytes), k.Written, len(gotOut)+len(gotErr))
	}
	// Each stream's lines are kept in their own order.
	var keptOut, keptErr strings.Builder
	for _, l := range strings.SplitAfter(string(k.Bytes), "\n") {
		switch {
		case strings.HasPrefix(l, "out "):
			keptOut.WriteString(l)
		case strings.HasPrefix(l, "err "):
			keptErr.WriteString(l)
		}
	}
	if keptOut.String() != lines("out", n) || keptErr.String() != lines("err", n) {
		t.Error("the kept bytes do not hold each stream in its order")
	}
}

// A reader that goes away (`leaderrun … | head -1`) reaches COMMAND: its
// next write meets a closed pipe and SIGPIPE ends it, as without leaderrun.
func TestKeepOutputReaderGone(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	errf, err := os.Create(t.TempDir() + "/err")
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	o, err := KeepOutput(64, w, errf)
	if err != nil {
		t.Fatal(err)
	}
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	p, err := Start(Config{Argv: []string{testExe}, Env: append(testEnv(), "RUNNER_TEST_CHILD=yes"),
		Stdin: devnull, Stdout: o.Stdout(), Stderr: o.Stderr(), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(0)
	if _, err := io.ReadFull(r, make([]byte, 2)); err != nil {
		t.Fatal(err)
	}
	r.Close() // head has read its line
	select {
	case <-p.Done():
	case <-time.After(within):
		t.Fatal("the command writes on to a reader that has gone")
	}
	if res := p.Result(); res.Signal != syscall.SIGPIPE {
		t.Errorf("the command ended with %+v, want SIGPIPE", res)
	}
	if k := o.Close(within); !bytes.HasPrefix(k.Bytes, []byte("y\n")) && len(k.Bytes) == 0 {
		t.Errorf("kept %q", k.Bytes)
	}
}

// Close waits for the writers to close their ends, but no longer than it
// is told: one that stays (a process that escaped) then meets a closed pipe.
func TestKeepOutputCloseIsBounded(t *testing.T) {
	t.Parallel()
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o, err := KeepOutput(16, f, f)
	if err != nil {
		t.Fatal(err)
	}
	stay, err := unix.Dup(int(o.Stdout().Fd())) // a writer leaderrun does not know of
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(stay)
	if _, err := unix.Write(stay, []byte("left behind\n")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	k := o.Close(200 * time.Millisecond)
	if took := time.Since(start); took < 200*time.Millisecond || took > within {
		t.Errorf("Close took %s, want the 200ms it was given", took)
	}
	if string(k.Bytes) != "left behind\n" {
		t.Errorf("kept %q", k.Bytes)
	}
	if _, err := unix.Write(stay, []byte("more\n")); err != unix.EPIPE {
		t.Errorf("a write after Close: %v, want EPIPE", err)
	}
}
