package runner

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPty returns a new pseudo-terminal's controller and terminal ends.
func openPty(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("cannot unlock a pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("cannot name a pseudo-terminal: %v", err)
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("cannot open a pseudo-terminal: %v", err)
	}
	return ptm, pts
}

// TestTerminalForeground runs a leaderrun-like helper in a session of its
// own on a pseudo-terminal: the command must get the terminal (read from it,
// get Ctrl-C, which the helper must not), and the helper must get the
// terminal back afterwards. A prepared command must leave the terminal, and
// Ctrl-C, to the helper until it is launched.
func TestTerminalForeground(t *testing.T) {
	t.Parallel()
	for _, prepare := range []bool{false, true} {
		name := "Start"
		if prepare {
			name = "Prepare"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testTerminalForeground(t, prepare)
		})
	}
}

func testTerminalForeground(t *testing.T, prepare bool) {
	ptm, pts := openPty(t)
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(testExe)
	helper.Env = append(testEnv(), "RUNNER_TEST_CHILD=tty")
	if prepare {
		helper.Env = append(helper.Env, "RUNNER_TEST_PREPARE=1")
	}
	helper.Stdin = pts
	helper.Stdout = w
	helper.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	helper.Stderr = stderr
	own, err := startOwn(helper)
	w.Close()
	pts.Close()
	if err != nil {
		out.Close()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = own.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = helper.Process.Kill()
		select {
		case <-exited:
		case <-time.After(within):
			t.Error("the helper did not go")
		}
	})
	logs := func() string {
		b, _ := os.ReadFile(stderr.Name())
		return string(b)
	}
	lines := make(chan string, 10)
	go func() {
		defer out.Close()
		defer close(lines)
		s := bufio.NewScanner(out)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-lines:
			if got != want {
				t.Fatalf("got %q, want %q (stderr: %s)", got, want, logs())
			}
		case <-time.After(within):
			t.Fatalf("no %q (stderr: %s)", want, logs())
		}
	}

	if prepare {
		expect("kept")
		if _, err := ptm.Write([]byte{3}); err != nil { // Ctrl-C, for the helper
			t.Fatal(err)
		}
		expect("interrupted")
	}
	expect("foreground=true")
	if _, err := ptm.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	expect("read hello")
	expect("ready")
	if _, err := ptm.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	expect(syscall.SIGINT.String())
	expect("reclaimed 0")
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("helper: %v (stderr: %s)", waitErr, logs())
		}
	case <-time.After(within):
		t.Fatal("the helper did not exit")
	}
}

// TestTerminalTostop runs a leaderrun-like helper as a shell's job on a
// terminal set to `stty tostop`, and has it write a log line to the
// terminal while its command holds the terminal's foreground: a background
// write there raises SIGTTOU, which must not stop the helper (it would
// never reclaim the terminal nor report the command's end).
func TestTerminalTostop(t *testing.T) {
	t.Parallel()
	ptm, pts := openPty(t)
	tio, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
	if err != nil {
		t.Skipf("cannot read the terminal's settings: %v", err)
	}
	tio.Lflag |= unix.TOSTOP
	if err := unix.IoctlSetTermios(int(pts.Fd()), unix.TCSETS, tio); err != nil {
		t.Skipf("cannot set tostop: %v", err)
	}
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	shell := exec.Command(testExe)
	shell.Env = append(testEnv(), "RUNNER_TEST_CHILD=shell")
	shell.Stdin, shell.Stdout = pts, w
	shell.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	shell.Stderr = stderr
	own, err := startOwn(shell)
	w.Close()
	pts.Close()
	if err != nil {
		out.Close()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = own.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = shell.Process.Kill()
		<-exited
	})
	go func() { _, _ = io.Copy(io.Discard, ptm) }() // what the terminal shows
	lines := make(chan string, 10)
	go func() {
		defer out.Close()
		defer close(lines)
		s := bufio.NewScanner(out)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	logs := func() string {
		b, _ := os.ReadFile(stderr.Name())
		return string(b)
	}
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-lines:
			if got != want {
				t.Fatalf("got %q, want %q (stderr: %s)", got, want, logs())
			}
		case <-time.After(within):
			t.Fatalf("no %q (stderr: %s)", want, logs())
		}
	}
	expect("foreground=true")
	if _, err := ptm.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	expect("read hello")
	expect("ready")
	if _, err := ptm.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	expect(syscall.SIGINT.String())
	expect("reclaimed 0")
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("shell: %v (stderr: %s)", waitErr, logs())
		}
	case <-time.After(within):
		t.Fatal("the shell did not exit")
	}
}
