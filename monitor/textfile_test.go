package monitor

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// gaugesOf parses the textfile back with Prometheus's own parser.
func gaugesOf(t *testing.T, path, lease string) map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("Prometheus cannot parse the textfile: %v", err)
	}
	out := map[string]float64{}
	for name, mf := range families {
		if mf.GetHelp() == "" || mf.GetType().String() != "GAUGE" {
			t.Errorf("%s: help %q, type %s; want a gauge with help", name, mf.GetHelp(), mf.GetType())
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == lease {
				out[name] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func TestTextfileCarriesTheLastSuccessOver(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "leaderrun_report.prom")
	at := func(s int) time.Time { return time.Unix(1_800_000_000+int64(s), 0) }
	zero, three := 0, 3

	if err := WriteTextfile(path, Run{Lease: "cron/report", Invocation: at(0), Start: at(0)}, nil); err != nil {
		t.Fatal(err)
	}
	if g := gaugesOf(t, path, "cron/report"); g["leaderrun_running"] != 1 || g["leaderrun_last_run_start_timestamp_seconds"] != float64(at(0).Unix()) {
		t.Errorf("while running: %v", g)
	}
	if err := WriteTextfile(path, Run{Lease: "cron/report", End: at(10), ExitCode: &zero}, nil); err != nil {
		t.Fatal(err)
	}
	g := gaugesOf(t, path, "cron/report")
	if g["leaderrun_running"] != 0 || g["leaderrun_last_success_timestamp_seconds"] != float64(at(10).Unix()) || g["leaderrun_last_run_exit_code"] != 0 {
		t.Errorf("after a success: %v", g)
	}
	// A failed run, then a skip: the last success stays where it was.
	if err := WriteTextfile(path, Run{Lease: "cron/report", Invocation: at(300), Start: at(300)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteTextfile(path, Run{Lease: "cron/report", End: at(310), ExitCode: &three}, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteTextfile(path, Run{Lease: "cron/report", Invocation: at(600)}, nil); err != nil {
		t.Fatal(err)
	}
	g = gaugesOf(t, path, "cron/report")
	want := map[string]float64{
		"leaderrun_last_success_timestamp_seconds":    float64(at(10).Unix()),
		"leaderrun_last_run_exit_code":                3,
		"leaderrun_last_run_start_timestamp_seconds":  float64(at(300).Unix()),
		"leaderrun_last_run_end_timestamp_seconds":    float64(at(310).Unix()),
		"leaderrun_last_invocation_timestamp_seconds": float64(at(600).Unix()),
		"leaderrun_running":                           0,
	}
	for k, v := range want {
		if g[k] != v {
			t.Errorf("%s = %v, want %v", k, g[k], v)
		}
	}
	// Written atomically: no temporary file is left; beside the textfile
	// only its lock file, whose name does not end in .prom.
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != ".leaderrun_report.prom.lock leaderrun_report.prom" {
		t.Errorf("files in the directory: %v, want the textfile and its lock file", names)
	}
}

// A host that never ran COMMAND has no run gauges at all, only the
// invocation: absent, not a misleading 0.
func TestTextfileSkipOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.prom")
	if err := WriteTextfile(path, Run{Lease: "x", Invocation: time.Unix(1_800_000_000, 0)}, nil); err != nil {
		t.Fatal(err)
	}
	g := gaugesOf(t, path, "x")
	if _, ok := g["leaderrun_last_success_timestamp_seconds"]; ok || len(g) != 2 {
		t.Errorf("gauges %v, want the invocation and running alone", g)
	}
}

// A skip, or a lease held by another host, records the invocation alone:
// this host's own run may still be going, so leaderrun_running stays 1
// until that run's end is written.
func TestTextfileSkipKeepsRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.prom")
	at := func(s int) time.Time { return time.Unix(1_800_000_000+int64(s), 0) }
	zero := 0
	for _, step := range []struct {
		r       Run
		running float64
	}{
		{Run{Invocation: at(0), Start: at(0)}, 1},
		{Run{Invocation: at(60)}, 1}, // a skip while the run goes on
		{Run{End: at(90), ExitCode: &zero}, 0},
		{Run{Invocation: at(120)}, 0},
	} {
		step.r.Lease = "x"
		if err := WriteTextfile(path, step.r, nil); err != nil {
			t.Fatal(err)
		}
		if g := gaugesOf(t, path, "x"); g["leaderrun_running"] != step.running {
			t.Errorf("after %+v: leaderrun_running %v, want %v", step.r, g["leaderrun_running"], step.running)
		}
	}
}

// What someone who can write the textfile's directory may put at its path
// never holds leaderrun up, and is never followed: a FIFO, a link to a
// FIFO or a device, a link to a file elsewhere, a file too large or not of
// gauges. One WARNING, and the textfile is written from scratch in its
// place; a directory is left alone, and the write fails.
func TestTextfileOddThingsAtThePath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, path string)
		fails bool
	}{
		{"fifo", func(t *testing.T, path string) { mkfifo(t, path) }, false},
		{"link to a fifo", func(t *testing.T, path string) {
			mkfifo(t, path+".fifo")
			symlink(t, path+".fifo", path)
		}, false},
		{"link to a device", func(t *testing.T, path string) { symlink(t, "/dev/zero", path) }, false},
		{"link to a file elsewhere", func(t *testing.T, path string) {
			writeFile(t, path+".elsewhere", aSuccess)
			symlink(t, path+".elsewhere", path)
		}, false},
		{"too large", func(t *testing.T, path string) {
			writeFile(t, path, aSuccess+strings.Repeat("# padding\n", textfileMaxSize/10+1))
		}, false},
		{"not gauges", func(t *testing.T, path string) { writeFile(t, path, "this is { not a textfile\n") }, false},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.prom")
			tc.make(t, path)
			var logs bytes.Buffer
			done := make(chan error, 1)
			go func() {
				done <- WriteTextfile(path, Run{Lease: "x", Invocation: time.Unix(1_800_000_000, 0)}, hclog.New(&hclog.LoggerOptions{Output: &logs}))
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				unblockFIFO(path)
				t.Fatal("WriteTextfile hangs")
			}
			if tc.fails {
				if err == nil {
					t.Error("no error")
				}
				if fi, serr := os.Lstat(path); serr != nil || !fi.IsDir() {
					t.Error("the directory was not left alone")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(logs.String(), "[WARN]"); n != 1 {
				t.Errorf("%d WARNING lines, want 1:\n%s", n, logs.String())
			}
			if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("the path is not a regular file now: %v %v", fi, err)
			}
			g := gaugesOf(t, path, "x")
			if _, carried := g["leaderrun_last_success_timestamp_seconds"]; carried || g["leaderrun_last_invocation_timestamp_seconds"] != 1_800_000_000 {
				t.Errorf("gauges %v, want the invocation alone, from scratch", g)
			}
			if b, err := os.ReadFile(path + ".elsewhere"); err == nil && string(b) != aSuccess {
				t.Errorf("the link's target was written: %q", b)
			}
		})
	}
}

// Two leaderruns of one host write the textfile at once: neither loses
// the other's values. Each writes its own gauge, rising, and reads the
// file back after each write: without the lock, the other's rename of a
// file it read before this write puts the gauge back.
func TestTextfileWritersRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.prom")
	const writes = 150
	var wg sync.WaitGroup
	for _, gauge := range []string{"leaderrun_last_run_start_timestamp_seconds", "leaderrun_last_invocation_timestamp_seconds"} {
		wg.Go(func() {
			for i := 1; i <= writes; i++ {
				r := Run{Lease: "x"}
				at := time.Unix(int64(i), 0)
				if gauge == "leaderrun_last_invocation_timestamp_seconds" {
					r.Invocation = at
				} else {
					r.Start = at
				}
				if err := WriteTextfile(path, r, nil); err != nil {
					t.Error(err)
					return
				}
				if v := gaugesOf(t, path, "x")[gauge]; v < float64(i) {
					t.Errorf("%s went back from %d to %v: the other writer lost this one's write", gauge, i, v)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A lock held by a process that does not let go (another leaderrun stuck
// in a hung write, or anyone with access to the directory) delays a write
// by TextfileLockWait at most; the file is written without the lock, with
// one WARNING.
func TestTextfileLockWaitIsBounded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.prom")
	lock, err := os.OpenFile(filepath.Join(dir, ".x.prom.lock"), os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- WriteTextfile(path, Run{Lease: "x", Invocation: time.Unix(1_800_000_000, 0)}, hclog.New(&hclog.LoggerOptions{Output: &logs}))
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(TextfileLockWait + 10*time.Second):
		t.Fatal("the write waits for the lock without a bound")
	}
	if !strings.Contains(logs.String(), "without its lock") || strings.Count(logs.String(), "[WARN]") != 1 {
		t.Errorf("want one WARNING saying the file was written without its lock:\n%s", logs.String())
	}
	if g := gaugesOf(t, path, "x"); g["leaderrun_last_invocation_timestamp_seconds"] != 1_800_000_000 {
		t.Errorf("gauges %v", g)
	}
}

// aSuccess is a textfile that the previous file must not pass on.
const aSuccess = "# TYPE leaderrun_last_success_timestamp_seconds gauge\nleaderrun_last_success_timestamp_seconds{lease=\"x\"} 123\n"

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// unblockFIFO opens a FIFO at path for writing without blocking, which
// lets a reader blocked in open go on.
func unblockFIFO(path string) {
	if fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
		unix.Close(fd)
	}
}

// BenchmarkWriteTextfile: one write as a run makes it (lock, read, encode,
// temporary file, rename), on the test's temporary directory. The figure
// is what textfileWait's second for a local write is measured against.
func BenchmarkWriteTextfile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "x.prom")
	zero := 0
	for i := 0; b.Loop(); i++ {
		r := Run{Lease: "x", Invocation: time.Unix(int64(i), 0), Start: time.Unix(int64(i), 0)}
		if i%2 == 1 {
			r = Run{Lease: "x", End: time.Unix(int64(i), 0), ExitCode: &zero}
		}
		if err := WriteTextfile(path, r, nil); err != nil {
			b.Fatal(err)
		}
	}
}
