//go:build unix

package runner

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
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
//	        then exit 0 if RUNNER_TEST_THEN is "exit", else sleep
//	grand   ignore SIGTERM if RUNNER_TEST_IGNORE_TERM is set, write its pid
//	        to RUNNER_TEST_PIDFILE, sleep
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
//	        "interrupted", then Launch it
//	health  be leaderrun running a health check (see healthChild)
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
		time.Sleep(childLife)
		return 0
	case "parent":
		return parentChild()
	case "prepare":
		return preparedParent()
	case "tty":
		return ttyChild()
	case "health":
		return healthChild()
	}
	fmt.Fprintln(os.Stderr, "unknown RUNNER_TEST_CHILD mode", mode)
	return 2
}

var signalsByName = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "WINCH": syscall.SIGWINCH,
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
	g.Env = append(os.Environ(), "RUNNER_TEST_CHILD=grand")
	if err := g.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
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
		return 0
	}
	time.Sleep(childLife)
	return 0
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

// startHelper starts the test binary as a helper that plays leaderrun (env
// says how) and returns it with the read end of its stderr, which whatever
// it starts (the guard, the command, a grandchild) shares: reading it ends
// when the last of them has gone. The helper is killed at cleanup.
func startHelper(t *testing.T, env ...string) (*exec.Cmd, *os.File) {
	t.Helper()
	helper := exec.Command(testExe)
	helper.Env = append(testEnv(), env...)
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	helper.Stderr = w
	err = helper.Start()
	w.Close()
	if err != nil {
		stderr.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	return helper, stderr
}
