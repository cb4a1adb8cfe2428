package e2e

// End-to-end tests: the scripts in testdata/script drive the built leaderrun
// binary against the Azurite emulator (scripts/test.sh starts it and sets
// LEADERRUN_TEST_CONNECTION_STRING). Without an emulator they are skipped,
// except under CI=true, where that is a failure.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"

	"github.com/leaderrun/leaderrun/internal/testkit/fakeimds"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

func TestMain(m *testing.M) {
	testscript.Main(cleanupAfter{m}, map[string]func(){
		"lrchild":      childMain,
		"notifylisten": notifyListenMain,
	})
}

// cleanupAfter removes the binaries built for the tests once they have run.
type cleanupAfter struct{ m *testing.M }

func (c cleanupAfter) Run() int {
	code := c.m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// leaderrunBinary builds the real binary once per test run.
func leaderrunBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "leaderrun-e2e-bin")
		if buildErr != nil {
			return
		}
		buildErr = testenv.Build(context.Background(), "..", ".", filepath.Join(binDir, "leaderrun"))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "leaderrun")
}

// connectionString returns the emulator's connection string, or skips.
func connectionString(t *testing.T) string {
	t.Helper()
	cs := os.Getenv("LEADERRUN_TEST_CONNECTION_STRING")
	if cs == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("LEADERRUN_TEST_CONNECTION_STRING is not set: run the tests with scripts/test.sh, which starts Azurite")
		}
		t.Skip("no storage emulator: run scripts/test.sh, or set LEADERRUN_TEST_CONNECTION_STRING")
	}
	return cs
}

func TestScripts(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	testscript.Run(t, testscript.Params{
		Dir:                 "../testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("AZURE_STORAGE_CONNECTION_STRING", cs)
			env.Setenv("TEST_CONNECTION_STRING", cs)
			env.Setenv("TEST_BLOB_ENDPOINT", testenv.ConnField(cs, "BlobEndpoint"))
			env.Setenv("LEADERRUN_CONTAINER", "e2e-"+testenv.RandHex(6))
			env.Setenv("CI", os.Getenv("CI"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfile":     cmdWaitfile,
			"nooverlap":    cmdNoOverlap,
			"sleep":        cmdSleep,
			"lines":        cmdLines,
			"signal":       cmdSignal,
			"startgap":     cmdStartGap,
			"children":     cmdChildren,
			"fakeimds":     fakeimds.ScriptCmd,
			"slotruns":     cmdSlotRuns, // e2e_slots_test.go
			"stderrclosed": cmdStderrClosed,
			"exitstatus":   cmdExitStatus, // status_test.go
			"countlines":   cmdCountLines,
		},
	})
}

// waitfile [-timeout D] FILE... waits until every FILE exists.
func cmdWaitfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! waitfile")
	}
	timeout := 30 * time.Second
	if len(args) >= 2 && args[0] == "-timeout" {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		timeout, args = d, args[2:]
	}
	deadline := time.Now().Add(timeout)
	for _, f := range args {
		for {
			if _, err := os.Stat(ts.MkAbs(f)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				ts.Fatalf("waitfile: %s did not appear within %s", f, timeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// signal SIG WORD sends SIG (TERM, INT, HUP, USR1, KILL, STOP, CONT…) to
// the one background command whose arguments contain WORD; testscript's own
// kill knows only INT and KILL.
func cmdSignal(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: signal SIG WORD")
	}
	sig := unix.SignalNum("SIG" + strings.TrimPrefix(strings.ToUpper(args[0]), "SIG"))
	if sig == 0 {
		ts.Fatalf("unknown signal %s", args[0])
	}
	ts.Check(backgroundCmd(ts, args[1]).Process.Signal(sig))
}

// stderrclosed CMD [ARG...] runs CMD in the script's directory, with the
// script's PATH, storage and container, its standard output to the script's
// stdout, and its standard error a pipe whose reader has gone (as after
// `2>&1 | head`, or a dropped ssh); then prints "status=N", or
// "signal=NAME" when a signal ended it.
func cmdStderrClosed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: stderrclosed CMD [ARG...]")
	}
	r, w, err := os.Pipe()
	ts.Check(err)
	r.Close()
	defer w.Close()
	env := os.Environ()
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "AZURE_STORAGE_CONNECTION_STRING", "LEADERRUN_CONTAINER"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	path := args[0]
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if p := filepath.Join(dir, args[0]); !strings.Contains(args[0], "/") && fileExecutable(p) {
			path = p
			break
		}
	}
	var out bytes.Buffer
	cmd := exec.Command(path, args[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = ts.MkAbs("."), env, &out, w
	err = cmd.Run()
	ts.Stdout().Write(out.Bytes())
	var ee *exec.ExitError
	switch {
	case err == nil:
		fmt.Fprintln(ts.Stdout(), "status=0")
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			fmt.Fprintln(ts.Stdout(), "signal="+unix.SignalName(ws.Signal()))
		} else {
			fmt.Fprintf(ts.Stdout(), "status=%d\n", ee.ExitCode())
		}
	default:
		ts.Fatalf("stderrclosed: %v", err)
	}
}

func fileExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// backgroundCmd is the one background command whose arguments contain word.
func backgroundCmd(ts *testscript.TestScript, word string) *exec.Cmd {
	var found *exec.Cmd
	for _, c := range ts.BackgroundCmds() {
		if slices.Contains(c.Args, word) {
			if found != nil {
				ts.Fatalf("more than one background command has %q", word)
			}
			found = c
		}
	}
	if found == nil || found.Process == nil {
		ts.Fatalf("no background command has %q", word)
	}
	return found
}

// children WORD N checks that the background command whose arguments
// contain WORD has N child processes (Linux: /proc). A leading leaderrun
// has one, its guard; a waiting one none.
func cmdChildren(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: children WORD N")
	}
	if runtime.GOOS != "linux" {
		ts.Logf("children: not on %s", runtime.GOOS)
		return
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	pid := backgroundCmd(ts, args[0]).Process.Pid
	entries, err := os.ReadDir("/proc")
	ts.Check(err)
	var kids []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // not a process, or gone
		}
		// pid (comm) state ppid …: comm may hold spaces, so cut at the last ')'.
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(pid) {
			kids = append(kids, e.Name())
		}
	}
	if len(kids) != want {
		ts.Fatalf("children: %s (pid %d) has %d child processes %v, want %d", args[0], pid, len(kids), kids, want)
	}
}

// sleep D pauses the script; used only to let a background process reach a
// state that has no file to wait for, never to assert timing.
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// lines FILE N checks that FILE has exactly N lines.
func cmdLines(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lines FILE N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	data := ts.ReadFile(args[0])
	got := strings.Count(data, "\n")
	if (got == want) == neg {
		ts.Fatalf("%s has %d lines, want %s%d", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// nooverlap [-holders] [-runs N] FILE checks the begin/end records that
// lrchild -log wrote: no two runs overlap in time, every run ended, and
// (with -runs) there were exactly N runs. With -holders, a run is every
// process one holder (LEADERRUN_IDENTITY) ran, from the first begin to the
// last record: none of them may outlive the holder's lease.
func cmdNoOverlap(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! nooverlap")
	}
	holders := false
	if len(args) >= 1 && args[0] == "-holders" {
		holders, args = true, args[1:]
	}
	wantRuns := -1
	if len(args) >= 2 && args[0] == "-runs" {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		wantRuns, args = n, args[2:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: nooverlap [-holders] [-runs N] FILE")
	}
	runs, err := readRuns(ts.MkAbs(args[0]))
	ts.Check(err)
	if holders {
		runs = byHolder(runs)
	}
	if wantRuns >= 0 && len(runs) != wantRuns {
		ts.Fatalf("%d runs, want %d", len(runs), wantRuns)
	}
	if err := checkOverlap(runs); err != nil {
		ts.Fatalf("%v", err)
	}
	ts.Logf("%d runs, no overlap", len(runs))
}

// startgap FILE MAX checks that each run recorded in FILE began within MAX
// of the previous run's beginning: a bound on how long leadership took to
// pass on, with a generous margin.
func cmdStartGap(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: startgap FILE MAX")
	}
	limit, err := time.ParseDuration(args[1])
	ts.Check(err)
	runs, err := readRuns(ts.MkAbs(args[0]))
	ts.Check(err)
	if len(runs) < 2 {
		ts.Fatalf("%d runs: nothing passed on", len(runs))
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].begin.Before(runs[j].begin) })
	for i := 1; i < len(runs); i++ {
		gap := runs[i].begin.Sub(runs[i-1].begin)
		ts.Logf("%s began %s after %s", runs[i].id, gap.Round(time.Millisecond), runs[i-1].id)
		if gap > limit {
			ts.Fatalf("%s began %s after %s: more than %s", runs[i].id, gap, runs[i-1].id, limit)
		}
	}
}

// run is one child's life as lrchild -log recorded it.
type run struct {
	id         string
	term       int64
	slot       int // LEADERRUN_SLOT; -1 if not recorded
	begin, end time.Time
	ended      bool
}

func readRuns(path string) ([]run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byID := map[string]*run{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// EVENT UNIXNANO PID TERM IDENTITY slot=SLOT
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			return nil, fmt.Errorf("bad record %q", sc.Text())
		}
		ns, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad record %q: %v", sc.Text(), err)
		}
		at := time.Unix(0, ns)
		key := fields[2]
		r := byID[key]
		if r == nil {
			term, _ := strconv.ParseInt(fields[3], 10, 64)
			r = &run{id: strings.Join(fields[2:], " "), term: term, slot: recordSlot(fields), begin: at, end: at}
			byID[key] = r
			order = append(order, key)
		}
		switch fields[0] {
		case "begin":
			r.begin = at
		case "beat":
			r.end = at
		case "end":
			r.end, r.ended = at, true
		}
	}
	runs := make([]run, 0, len(order))
	for _, k := range order {
		runs = append(runs, *byID[k])
	}
	return runs, sc.Err()
}

// byHolder merges the runs of each identity into one, from its first begin
// to its last record.
func byHolder(runs []run) []run {
	var out []run
	at := map[string]int{}
	for _, r := range runs {
		f := strings.Fields(r.id) // PID TERM IDENTITY slot=SLOT
		id := r.id
		if len(f) >= 3 {
			id = f[2]
		}
		i, ok := at[id]
		if !ok {
			at[id] = len(out)
			r.id = id
			out = append(out, r)
			continue
		}
		m := &out[i]
		if r.begin.Before(m.begin) {
			m.begin = r.begin
		}
		if r.end.After(m.end) {
			m.end = r.end
		}
	}
	return out
}

func checkOverlap(runs []run) error {
	sorted := append([]run(nil), runs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].begin.Before(sorted[j].begin) })
	for i := 1; i < len(sorted); i++ {
		prev, cur := sorted[i-1], sorted[i]
		if cur.begin.Before(prev.end) {
			return fmt.Errorf("overlap of %s: %s began %s before %s ended", prev.end.Sub(cur.begin), cur.id, prev.end.Sub(cur.begin), prev.id)
		}
		if cur.term != 0 && prev.term != 0 && cur.term <= prev.term {
			return fmt.Errorf("term did not grow: %s (term %d) after %s (term %d)", cur.id, cur.term, prev.id, prev.term)
		}
	}
	return nil
}
