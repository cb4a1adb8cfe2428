//go:build unix

package runner

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// The test binary is also every process the tests need: the
// guard, when started with the guard's argument, and a child whose behaviour
// RUNNER_TEST_CHILD selects. Children give up after childLife, so a failed
// test cannot leave them behind for long.
const childLife = 90 * time.Second

// testExe is the test binary, started as the command and as helpers.
var testExe string

// touchArg makes the test binary, as `testExe touchArg PATH`, create PATH
// and exit 0: a command that leaves a trace if it runs, selected by its
// argv because a prepared command's environment is only known at Launch.
const touchArg = "-runner-test-touch"

func TestMain(m *testing.M) {
	if code, ok := RunGuard(os.Args); ok {
		os.Exit(code)
	}
	if len(os.Args) == 3 && os.Args[1] == touchArg {
		if err := os.WriteFile(os.Args[2], nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if mode := os.Getenv("RUNNER_TEST_CHILD"); mode != "" {
		os.Exit(child(mode))
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot find the test binary:", err)
		os.Exit(1)
	}
	testExe = exe
	os.Exit(m.Run())
}

// child runs one of the test children. Modes:
//
//	exit    exit with RUNNER_TEST_CODE
//	sleep   print "ready", then sleep (default signal handling)
//	catch   catch RUNNER_TEST_SIGNALS (e.g. "TERM,USR1"), print "ready", then
//	        print each signal caught; exit 0 on RUNNER_TEST_EXIT_ON if set
//	env     print the value of the variable named by RUNNER_TEST_VAR
//	environ print each entry of its environment, Go-quoted, then "end"
//	fork    start a "grand" grandchild, wait for its pid file, print "ready",
//	        then exit RUNNER_TEST_CODE if RUNNER_TEST_THEN is "exit", else
//	        sleep. RUNNER_TEST_ESCAPE says how the grandchild leaves the
//	        command's group: "setsid" (a session of its own), "group" (a
//	        group of its own, as timeout(1) does), "daemon" (a double fork
//	        into a session of its own: an orphan) or "" (it stays).
//	        RUNNER_TEST_ARGV (space-separated) runs that program, given the
//	        pid file as its last argument, instead of "grand"
//	        RUNNER_TEST_GRAND names the grandchild's mode ("grand" if unset)
//	hop     write its pid to RUNNER_TEST_PIDFILE, wait until RUNNER_TEST_GO
//	        exists, start a "grand" child whose pid file is
//	        RUNNER_TEST_HOP_PIDFILE, wait for that file, and exit 0: the
//	        middle of a double fork, on cue
//	spawn   start RUNNER_TEST_ARGV (as "grand" if it is the test binary) in
//	        a session of its own and exit at once (a double fork's middle)
//	grand   ignore SIGTERM if RUNNER_TEST_IGNORE_TERM is set, write its pid
//	        to RUNNER_TEST_PIDFILE, sleep (until RUNNER_TEST_GO exists, if
//	        set, then exit 0)
//	sigign  print the signals it inherited ignored (SigIgn of
//	        /proc/self/status), then "end"
//	parent  be leaderrun: Start a "fork" command, write the group's id to
//	        RUNNER_TEST_DIR/guard, log to stderr, wait to be killed
//	prepare be leaderrun waiting for the lease: Prepare a command that would
//	        create RUNNER_TEST_DIR/ran, write the guard's pid to
//	        RUNNER_TEST_DIR/guard, wait to be killed
//	tty     be leaderrun on a terminal (stdin): Start a "catch" command that
//	        reads a line from it and exits on SIGINT, then print "reclaimed"
//	        and the command's status if the terminal is back in our group.
//	        With RUNNER_TEST_PREPARE set, Prepare it first, print "kept" if
//	        the terminal is still our group's, wait for a SIGINT, print
//	        "interrupted", then Launch it. With RUNNER_TEST_LOG_TTY set,
//	        write a line to the terminal once the command holds it, as
//	        leaderrun's log does
//	write   write RUNNER_TEST_LINES lines, "out I" to stdout and "err I" to
//	        stderr by turns, one write each, then exit 0
//	yes     write "y" lines to stdout until a write fails (SIGPIPE)
//	health  be leaderrun running a health check (see healthChild)
//	pid1    be leaderrun as PID 1 (see pid1Child)
//	shell   be a shell on a terminal: put a "tty" child in a process group
//	        of its own in the foreground, and exit with its status
//
// With RUNNER_TEST_TTY set, catch first prints whether its group is in the
// terminal's foreground, then reads a line from stdin and prints it.
func child(mode string) int {
	switch mode {
	case "exit":
		code, _ := strconv.Atoi(os.Getenv("RUNNER_TEST_CODE"))
		return code
	case "sleep":
		fmt.Println("ready")
		time.Sleep(childLife)
		return 0
	case "catch":
		return catchChild()
	case "env":
		fmt.Println(os.Getenv(os.Getenv("RUNNER_TEST_VAR")))
		return 0
	case "environ":
		for _, kv := range os.Environ() {
			fmt.Printf("%q\n", kv)
		}
		fmt.Println("end")
		return 0
	case "fork":
		return forkChild()
	case "grand":
		if os.Getenv("RUNNER_TEST_IGNORE_TERM") != "" {
			signal.Ignore(syscall.SIGTERM)
		}
		if err := writeFileAtomic(os.Getenv("RUNNER_TEST_PIDFILE"), strconv.Itoa(os.Getpid())); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for end := time.Now().Add(childLife); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if f := os.Getenv("RUNNER_TEST_GO"); f != "" {
				if _, err := os.Stat(f); err == nil {
					return 0
				}
			}
		}
		return 0
	case "hop":
		return hopChild()
	case "spawn":
		argv := strings.Fields(os.Getenv("RUNNER_TEST_ARGV"))
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = append(os.Environ(), "RUNNER_TEST_CHILD=grand")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "sigign":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, line := range strings.Split(string(b), "\n") {
			if mask, ok := strings.CutPrefix(line, "SigIgn:"); ok {
				bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1
				}
				for sig := 1; sig <= 64; sig++ {
					if bits&(1<<(sig-1)) != 0 {
						fmt.Println(syscall.Signal(sig))
					}
				}
			}
		}
		fmt.Println("end")
		return 0
	case "parent":
		return parentChild()
	case "prepare":
		return preparedParent()
	case "tty":
		return ttyChild()
	case "write":
		n, _ := strconv.Atoi(os.Getenv("RUNNER_TEST_LINES"))
		for i := range n {
			fmt.Fprintf(os.Stdout, "out %d\n", i)
			fmt.Fprintf(os.Stderr, "err %d\n", i)
		}
		return 0
	case "yes":
		for end := time.Now().Add(childLife); time.Now().Before(end); {
			if _, err := os.Stdout.WriteString("y\n"); err != nil {
				return 1
			}
		}
		return 0
	case "health":
		return healthChild()
	case "pid1":
		return pid1Child()
	case "shell":
		return shellChild()
	}
	fmt.Fprintln(os.Stderr, "unknown RUNNER_TEST_CHILD mode", mode)
	return 2
}

var signalsByName = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "WINCH": syscall.SIGWINCH,
	"TSTP": syscall.SIGTSTP, "TTIN": syscall.SIGTTIN, "TTOU": syscall.SIGTTOU,
}

func catchChild() int {
	c := make(chan os.Signal, 16)
	for _, name := range strings.Split(os.Getenv("RUNNER_TEST_SIGNALS"), ",") {
		signal.Notify(c, signalsByName[name])
	}
	exitOn := signalsByName[os.Getenv("RUNNER_TEST_EXIT_ON")]
	if os.Getenv("RUNNER_TEST_TTY") != "" {
		pg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
		fmt.Printf("foreground=%v\n", err == nil && pg == unix.Getpgrp())
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil {
			fmt.Fprintln(os.Stderr, "read the terminal:", err)
			return 1
		}
		fmt.Println("read", strings.TrimSpace(line))
	}
	fmt.Println("ready")
	timeout := time.After(childLife)
	for {
		select {
		case s := <-c:
			fmt.Println(s)
			if exitOn != 0 && s == exitOn {
				return 0
			}
		case <-timeout:
			return 0
		}
	}
}

func forkChild() int {
	pidfile := os.Getenv("RUNNER_TEST_PIDFILE")
	if f := os.Getenv("RUNNER_TEST_CMD_PIDFILE"); f != "" {
		if err := writeFileAtomic(f, strconv.Itoa(os.Getpid())); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	g := exec.Command(os.Args[0])
	g.Env = append(os.Environ(), "RUNNER_TEST_CHILD="+cmp.Or(os.Getenv("RUNNER_TEST_GRAND"), "grand"))
	if argv := os.Getenv("RUNNER_TEST_ARGV"); argv != "" {
		f := append(strings.Fields(argv), pidfile)
		g = exec.Command(f[0], f[1:]...)
	}
	switch os.Getenv("RUNNER_TEST_ESCAPE") {
	case "setsid":
		g.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	case "group":
		g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	case "daemon":
		argv := strings.Join(g.Args, " ")
		g = exec.Command(os.Args[0])
		g.Env = append(os.Environ(), "RUNNER_TEST_CHILD=spawn", "RUNNER_TEST_ARGV="+argv)
	}
	if err := g.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv("RUNNER_TEST_ESCAPE") == "daemon" {
		_ = g.Wait()
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(pidfile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "grandchild did not write its pid file")
			return 1
		}
	}
	fmt.Println("ready")
	if os.Getenv("RUNNER_TEST_THEN") == "exit" {
		code, _ := strconv.Atoi(os.Getenv("RUNNER_TEST_CODE"))
		return code
	}
	time.Sleep(childLife)
	return 0
}

func hopChild() int {
	if err := writeFileAtomic(os.Getenv("RUNNER_TEST_PIDFILE"), strconv.Itoa(os.Getpid())); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for end := time.Now().Add(childLife); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(os.Getenv("RUNNER_TEST_GO")); err == nil {
			break
		}
		if time.Now().After(end) {
			return 1
		}
	}
	pidfile := os.Getenv("RUNNER_TEST_HOP_PIDFILE")
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), "RUNNER_TEST_CHILD=grand", "RUNNER_TEST_PIDFILE="+pidfile, "RUNNER_TEST_GO=")
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for end := time.Now().Add(childLife); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(pidfile); err == nil {
			return 0
		}
		if time.Now().After(end) {
			return 1
		}
	}
}

func parentChild() int {
	dir := os.Getenv("RUNNER_TEST_DIR")
	grace, _ := time.ParseDuration(os.Getenv("RUNNER_TEST_GRACE"))
	env := append(testEnv(),
		"RUNNER_TEST_CHILD=fork",
		"RUNNER_TEST_PIDFILE="+filepath.Join(dir, "grand"),
		"RUNNER_TEST_CMD_PIDFILE="+filepath.Join(dir, "cmd"),
		"RUNNER_TEST_THEN="+os.Getenv("RUNNER_TEST_THEN"),
		"RUNNER_TEST_IGNORE_TERM="+os.Getenv("RUNNER_TEST_IGNORE_TERM"),
		"RUNNER_TEST_ESCAPE="+os.Getenv("RUNNER_TEST_ESCAPE"),
	)
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := Start(Config{
		Argv:      []string{os.Args[0]},
		Env:       env,
		Stdin:     null,
		Stdout:    null,
		KillGrace: grace,
		Logger:    hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Debug}),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := writeFileAtomic(filepath.Join(dir, "guard"), strconv.Itoa(p.Pid())); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	select {
	case <-p.Done():
	case <-time.After(childLife):
	}
	return 3
}

func preparedParent() int {
	dir := os.Getenv("RUNNER_TEST_DIR")
	prep, err := Prepare(Config{
		Argv:   []string{os.Args[0], touchArg, filepath.Join(dir, "ran")},
		Logger: hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Debug}),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := writeFileAtomic(filepath.Join(dir, "guard"), strconv.Itoa(prep.proc.pgid)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	time.Sleep(childLife)
	prep.Discard()
	return 3
}

func ttyChild() int {
	cfg := Config{
		Argv: []string{os.Args[0]},
		Env: append(testEnv(), "RUNNER_TEST_CHILD=catch", "RUNNER_TEST_TTY=1",
			"RUNNER_TEST_SIGNALS=INT", "RUNNER_TEST_EXIT_ON=INT"),
		KillGrace: time.Hour,
	}
	var p *Process
	var err error
	if os.Getenv("RUNNER_TEST_PREPARE") == "" {
		p, err = Start(cfg)
	} else {
		p, err = prepareOnTerminal(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv("RUNNER_TEST_LOG_TTY") != "" {
		tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if _, err := fmt.Fprintln(tty, "leaderrun: a log line while the command holds the terminal"); err != nil {
			fmt.Fprintln(os.Stderr, "write the terminal:", err)
			return 1
		}
		tty.Close()
	}
	select {
	case <-p.Done():
	case <-time.After(childLife):
		return 1
	}
	if pg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err != nil || pg != unix.Getpgrp() {
		fmt.Println("terminal not reclaimed", pg, err)
		return 1
	}
	fmt.Println("reclaimed", p.Result().Code())
	return 0
}

// shellChild plays an interactive shell: the leaderrun it starts (a "tty"
// child, logging to the terminal) is a job in a group of its own that it
// puts in the terminal's foreground, in the shell's session, so that the
// job's group is not orphaned and job-control signals stop it.
func shellChild() int {
	c := exec.Command(os.Args[0])
	c.Env = append(testEnv(), "RUNNER_TEST_CHILD=tty", "RUNNER_TEST_LOG_TTY=1")
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0}
	if err := c.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "job:", err)
		return 1
	}
	return 0
}

// pid1Child plays leaderrun as PID 1 of a pid namespace of its own (unshare
// --pid --fork --mount-proc): it runs health checks whose shells leave
// orphans behind, which are reparented to it, and prints "passed N" (the
// checks' results must still be theirs), then "clean" once it has no child
// left, or the children it still has after a few seconds.
func pid1Child() int {
	if os.Getpid() != 1 {
		fmt.Println("not PID 1")
		return 1
	}
	c := HealthConfig{
		Cmd:    "setsid sleep 0.05 & sleep 0.05 & (sleep 0.05 &) ; exit 0",
		Logger: hclog.NewNullLogger(),
	}.WithDefaults()
	passed := 0
	for range 5 {
		if res := c.check(context.Background()); res.why == "" {
			passed++
		} else {
			fmt.Println("check failed:", res.why)
		}
	}
	fmt.Println("passed", passed)
	deadline := time.Now().Add(goneTime)
	for {
		var left []string
		procs, _ := os.ReadDir("/proc")
		for _, e := range procs {
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			i := bytes.LastIndexByte(b, ')')
			if f := bytes.Fields(b[i+1:]); len(f) > 1 && string(f[1]) == "1" {
				left = append(left, e.Name()+":"+string(f[0]))
			}
		}
		if len(left) == 0 {
			fmt.Println("clean")
			return 0
		}
		if time.Now().After(deadline) {
			fmt.Println("children left:", strings.Join(left, " "))
			return 1
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// prepareOnTerminal prepares cfg's command, checks that the terminal stays
// with our group and that Ctrl-C reaches us meanwhile, then launches it.
func prepareOnTerminal(cfg Config) (*Process, error) {
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, syscall.SIGINT)
	prep, err := Prepare(cfg)
	if err != nil {
		return nil, err
	}
	defer prep.Discard()
	if pg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err != nil || pg != unix.Getpgrp() {
		return nil, fmt.Errorf("the prepared guard took the terminal: foreground group %d (%v)", pg, err)
	}
	fmt.Println("kept")
	select {
	case <-interrupts:
	case <-time.After(childLife):
		return nil, errors.New("no SIGINT")
	}
	fmt.Println("interrupted")
	return prep.Launch(cfg.Env)
}

// testEnv is this process's environment without the RUNNER_TEST_ switches,
// and without the race detector's one-second pause when a child exits 0.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNNER_TEST_") {
			env = append(env, kv)
		}
	}
	if _, ok := os.LookupEnv("GORACE"); !ok {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return env
}

// writeFileAtomic writes data to path so that a reader sees all or nothing.
func writeFileAtomic(path, data string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ownCmd is a process the test binary starts itself (a helper, gcc),
// registered with its reaper: once a guard has been prepared, the test
// binary, as leaderrun does, is the child subreaper of its descendants and
// reaps every child it did not register (see ownReaper), which would take
// the exit status from its Wait, and counts such a child among the
// command's processes once that command's guard has died.
type ownCmd struct {
	*exec.Cmd
	reaped chan struct{}
	once   sync.Once
	err    error
}

// startOwn starts c, registered with the test binary's reaper; the caller
// must Wait for it.
func startOwn(c *exec.Cmd) (*ownCmd, error) {
	o := &ownCmd{Cmd: c, reaped: make(chan struct{})}
	err := ownReaper().start(func() (int, <-chan struct{}, error) {
		if err := c.Start(); err != nil {
			return 0, nil, err
		}
		return c.Process.Pid, o.reaped, nil
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Wait is c.Wait, once; later calls return what the first did.
func (o *ownCmd) Wait() error {
	o.once.Do(func() {
		o.err = o.Cmd.Wait()
		close(o.reaped)
	})
	return o.err
}

// runOwn is c.Run, registered with the test binary's reaper.
func runOwn(c *exec.Cmd) error {
	o, err := startOwn(c)
	if err != nil {
		return err
	}
	return o.Wait()
}

// combinedOutputOwn is c.CombinedOutput, registered with the test binary's
// reaper.
func combinedOutputOwn(c *exec.Cmd) ([]byte, error) {
	var b lockedBuffer
	c.Stdout, c.Stderr = &b, &b
	err := runOwn(c)
	return []byte(b.String()), err
}

// startHelper starts the test binary as a helper that plays leaderrun (env
// says how) and returns it with the read end of its stderr, which whatever
// it starts (the guard, the command, a grandchild) shares: reading it ends
// when the last of them has gone. The helper is killed at cleanup.
func startHelper(t *testing.T, env ...string) (*ownCmd, *os.File) {
	t.Helper()
	helper := exec.Command(testExe)
	helper.Env = append(testEnv(), env...)
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	helper.Stderr = w
	own, err := startOwn(helper)
	w.Close()
	if err != nil {
		stderr.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Process.Kill(); _ = own.Wait() })
	return own, stderr
}
