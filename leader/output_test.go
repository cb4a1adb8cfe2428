package leader

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/runner"
)

// writingJob is a COMMAND that writes to the stdout it was given, runs
// until it exits by itself (after runFor, if not 0) or is stopped, writes
// its last words and dies a moment after a stop.
type writingJob struct {
	runFor time.Duration

	mu     sync.Mutex
	stdout *os.File
	done   chan struct{}
	res    runner.Result
	died   time.Time
	ended  bool
}

func (j *writingJob) Lookup(string) error { return nil }

func (j *writingJob) Prepare(cfg runner.Config) (Prepared, error) {
	j.stdout = cfg.Stdout
	return j, nil
}

func (j *writingJob) SetKillDeadline(time.Time) error { return nil }
func (j *writingJob) Discard()                        {}

func (j *writingJob) Launch([]string) (Process, error) {
	j.done = make(chan struct{})
	if _, err := j.stdout.WriteString("started\n"); err != nil {
		return nil, err
	}
	if j.runFor > 0 {
		time.AfterFunc(j.runFor, func() { j.end(runner.Result{ExitCode: 3}) })
	}
	return j, nil
}

func (j *writingJob) end(res runner.Result) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ended {
		return
	}
	_, _ = j.stdout.WriteString("last words\n")
	j.ended, j.res, j.died = true, res, time.Now()
	close(j.done)
}

func (j *writingJob) Pid() int               { return 4242 }
func (j *writingJob) Done() <-chan struct{}  { return j.done }
func (j *writingJob) Result() runner.Result  { <-j.done; return j.res }
func (j *writingJob) HandleSignal(os.Signal) {}
func (j *writingJob) Stop(time.Duration) {
	time.AfterFunc(100*time.Millisecond, func() { j.end(runner.Result{ExitCode: -1, Signal: syscall.SIGTERM}) })
}

// The output is kept once COMMAND's processes are gone, never before, in
// a blob of the run with what it exited with; on a lost lease too. Real
// time: the output's pipes are real, which testing/synctest cannot wait on.
func TestOutputKeptAfterTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name     string
		job      *writingJob
		lose     bool   // break the lease while COMMAND runs
		code     int    // leaderrun's exit status
		recorded string // the output blob's exit
	}{
		{"exits by itself", &writingJob{runFor: 200 * time.Millisecond}, false, 3, "3"},
		{"lost lease", &writingJob{}, true, exit.Lost, "76"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := blobsim.New()
			var mu sync.Mutex
			var uploads []time.Time
			svc.OnApply(func(a blobsim.Applied) {
				if strings.HasPrefix(a.Blob, "~output/") && a.Op == blobsim.OpPutBlob && a.Status/100 == 2 {
					mu.Lock()
					uploads = append(uploads, a.Time)
					mu.Unlock()
				}
			})
			b, err := lease.NewLeaseBlob(lease.ClientConfig{Container: "leases", Blob: "job",
				ConnectionString: blobsim.ConnectionString, Transport: svc.Transport("a")})
			if err != nil {
				t.Fatal(err)
			}
			out, err := os.Create(t.TempDir() + "/out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			j := tc.job
			if tc.lose {
				go breakWhenLeased(t, svc)
			}
			err = Run(t.Context(), Options{Client: b,
				Lease:      lease.Config{KillGrace: 5 * time.Second, RenewInterval: time.Second, Identity: "vm-1", Logger: hclog.NewNullLogger()},
				Argv:       []string{"job"},
				StopSignal: syscall.SIGTERM,
				KeepOutput: 1 << 10,
				Stdout:     out, Stderr: out,
				Launcher: j,
				Signals:  make(chan os.Signal),
			})
			if code, _ := exit.Code(err); code != tc.code {
				t.Fatalf("exit %d (%v), want %d", code, err, tc.code)
			}
			if got, _ := os.ReadFile(out.Name()); string(got) != "started\nlast words\n" {
				t.Errorf("stdout got %q", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(uploads) != 1 || uploads[0].Before(j.died) {
				t.Fatalf("uploads at %v, want one after COMMAND died at %v", uploads, j.died)
			}
			bl, ok := svc.Blob("leases", lease.OutputBlob("job", 0, 1))
			if !ok || bl.Metadata["exit"] != tc.recorded || bl.Metadata["written"] != "19" || bl.Length != 19 {
				t.Errorf("the output blob: %v %+v", ok, bl)
			}
		})
	}
}

// breakWhenLeased breaks the lease at once (period 0) as soon as it is held.
func breakWhenLeased(t *testing.T, svc *blobsim.Service) {
	op, err := lease.NewLeaseBlob(lease.ClientConfig{Container: "leases", Blob: "job",
		ConnectionString: blobsim.ConnectionString, Transport: svc.Transport("operator")})
	if err != nil {
		t.Error(err)
		return
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if bl, ok := svc.Blob("leases", "job"); ok && bl.State == blobsim.Leased && bl.Metadata["lastrunstart"] != "" {
			if _, err := op.BreakLease(t.Context(), 0); err != nil {
				t.Error(err)
			}
			return
		}
	}
}

// A terminal keeps COMMAND's output to itself: nothing is kept.
func TestOutputNotKeptOnATerminal(t *testing.T) {
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptm.Close()
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if out := keepOutput(hclog.NewNullLogger(), &Options{KeepOutput: 10, Stdout: f, Stderr: ptm}); out != nil {
		out.Close(0)
		t.Error("output kept with stderr on a terminal")
	}
	out := keepOutput(hclog.NewNullLogger(), &Options{KeepOutput: 10, Stdout: f, Stderr: f})
	if out == nil {
		t.Fatal("output not kept with stdout and stderr in a file")
	}
	out.Close(0)
}
