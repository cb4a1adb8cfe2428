package e2e

// Script commands that look at how a process ended, which a shell cannot
// tell (`wait $pid` gives 143 for "exit 143" and for "killed by SIGTERM"
// alike), and at how many lines of a level a log holds.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// scriptEnvKeys are the variables a script may set that a command run by
// exitstatus must see as the script has them.
var scriptEnvKeys = []string{"PATH", "HOME", "TMPDIR", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT",
	"AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "LEADERRUN_CONTAINER", "NOTIFY_SOCKET", "WATCHDOG_USEC",
	"WATCHDOG_PID", "GOTRACEBACK"}

// scriptCmd is CMD with the script's PATH, storage, container and the
// other scriptEnvKeys, run in the script's directory.
func scriptCmd(ts *testscript.TestScript, args []string) *exec.Cmd {
	env := os.Environ()
	for _, k := range scriptEnvKeys {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		} else {
			env = append(env, k+"=")
		}
	}
	path := args[0]
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if p := filepath.Join(dir, args[0]); !strings.Contains(args[0], "/") && fileExecutable(p) {
			path = p
			break
		}
	}
	cmd := exec.Command(path, args[1:]...)
	cmd.Dir, cmd.Env = ts.MkAbs("."), env
	return cmd
}

// exitstatus [-send SIG (-when FILE | -whenlog REGEXP)] CMD [ARG...] runs
// CMD (as scriptCmd); with -send it sends CMD SIG once FILE exists, or once
// a line of CMD's stderr matches REGEXP. Then it prints CMD's output and
// "status=N", or "signal=NAME" when a signal ended it ("signal=NAME core"
// if it dumped core). CMD's stderr is the script's stderr.
func cmdExitStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitstatus")
	}
	var (
		send    syscall.Signal
		when    string
		whenLog *regexp.Regexp
	)
	for len(args) >= 2 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-send":
			send = unix.SignalNum("SIG" + strings.TrimPrefix(strings.ToUpper(args[1]), "SIG"))
			if send == 0 {
				ts.Fatalf("unknown signal %s", args[1])
			}
		case "-when":
			when = args[1]
		case "-whenlog":
			var err error
			whenLog, err = regexp.Compile(args[1])
			ts.Check(err)
		default:
			ts.Fatalf("exitstatus: unknown option %s", args[0])
		}
		args = args[2:]
	}
	if len(args) == 0 || (send == 0) != (when == "" && whenLog == nil) {
		ts.Fatalf("usage: exitstatus [-send SIG (-when FILE | -whenlog REGEXP)] CMD [ARG...]")
	}
	cmd := scriptCmd(ts, args)
	var out bytes.Buffer
	errb := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &out, errb
	ts.Check(cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if send != 0 {
		ready := func() bool {
			if whenLog != nil {
				return whenLog.MatchString(errb.String())
			}
			_, err := os.Stat(ts.MkAbs(when))
			return err == nil
		}
		deadline := time.Now().Add(30 * time.Second)
		for !ready() {
			select {
			case err := <-done:
				ts.Fatalf("exitstatus: %s ended before it was time to send %s: %v\n%s", args[0], unix.SignalName(send), err, errb.String())
			default:
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				ts.Fatalf("exitstatus: not time to send %s within 30s", unix.SignalName(send))
			}
			time.Sleep(20 * time.Millisecond)
		}
		ts.Check(cmd.Process.Signal(send))
	}
	err := <-done
	ts.Stdout().Write(out.Bytes())
	ts.Stderr().Write([]byte(errb.String()))
	var ee *exec.ExitError
	switch {
	case err == nil:
		fmt.Fprintln(ts.Stdout(), "status=0")
	case errors.As(err, &ee):
		ws, ok := ee.Sys().(syscall.WaitStatus)
		switch {
		case ok && ws.Signaled() && ws.CoreDump():
			fmt.Fprintf(ts.Stdout(), "signal=%s core\n", unix.SignalName(ws.Signal()))
		case ok && ws.Signaled():
			fmt.Fprintf(ts.Stdout(), "signal=%s\n", unix.SignalName(ws.Signal()))
		default:
			fmt.Fprintf(ts.Stdout(), "status=%d\n", ee.ExitCode())
		}
	default:
		ts.Fatalf("exitstatus: %v", err)
	}
}

// lockedBuffer is a buffer a process writes while the script reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// countlines FILE REGEXP N checks that exactly N lines of FILE match
// REGEXP (for example the lines at WARN or ERROR level of a log).
func cmdCountLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: countlines FILE REGEXP N")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	want, err := strconv.Atoi(args[2])
	ts.Check(err)
	var got []string
	for line := range strings.Lines(ts.ReadFile(args[0])) {
		if re.MatchString(line) {
			got = append(got, strings.TrimRight(line, "\n"))
		}
	}
	if len(got) != want {
		ts.Fatalf("%s: %d lines match %q, want %d:\n%s", args[0], len(got), args[1], want, strings.Join(got, "\n"))
	}
}
