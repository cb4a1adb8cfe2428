package leader

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/exit"
	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/runner"
)

// hangingJob is a COMMAND that runs until it is stopped: it dies of the
// stop signal stopTake after it (never, when deaf), or of SIGKILL when the
// grace of a Stop runs out, as runner's policy has it. It records what the
// run flow asked of it.
type hangingJob struct {
	deaf     bool
	stopTake time.Duration

	mu        sync.Mutex
	launched  time.Time
	deadlines []time.Time // every kill deadline handed to its guard
	stops     []time.Time // when Stop was called
	graces    []time.Duration
	done      chan struct{}
	res       runner.Result
	died      time.Time
	dieTimer  *time.Timer
}

func (j *hangingJob) Lookup(string) error { return nil }

func (j *hangingJob) Prepare(runner.Config) (Prepared, error) { return j, nil }

func (j *hangingJob) SetKillDeadline(t time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.deadlines = append(j.deadlines, t)
	return nil
}

func (j *hangingJob) Launch([]string) (Process, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.launched, j.done = time.Now(), make(chan struct{})
	return j, nil
}

func (j *hangingJob) Discard() {}

func (j *hangingJob) Pid() int              { return 4242 }
func (j *hangingJob) Done() <-chan struct{} { return j.done }
func (j *hangingJob) Result() runner.Result { <-j.done; return j.res }

func (j *hangingJob) Stop(grace time.Duration) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stops, j.graces = append(j.stops, time.Now()), append(j.graces, grace)
	if len(j.stops) > 1 {
		return
	}
	res, after := runner.Result{ExitCode: -1, Signal: syscall.SIGKILL}, grace
	if !j.deaf && j.stopTake < grace {
		res, after = runner.Result{ExitCode: -1, Signal: syscall.SIGTERM}, j.stopTake
	}
	j.dieTimer = time.AfterFunc(after, func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.res, j.died = res, time.Now()
		close(j.done)
	})
}

func (j *hangingJob) HandleSignal(os.Signal) {}

// exitAfter makes COMMAND exit 0 by itself d after its launch if nothing
// ended it by then: a run flow that never stops it still ends.
func (j *hangingJob) exitAfter(d time.Duration) {
	time.AfterFunc(d, func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if len(j.stops) == 0 && j.done != nil {
			j.res, j.died = runner.Result{}, time.Now()
			close(j.done)
		}
	})
}

// --max-runtime: COMMAND gets the stop signal when it is reached, SIGKILL
// --kill-grace later; the lease is held (and renewed) until COMMAND is
// dead, the run is recorded as 124, and leaderrun exits 124 with one line
// for its caller to log, none of its own at WARN or ERROR. The guard's kill
// deadline is never later than the max runtime plus the grace.
func TestMaxRuntime(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  *hangingJob
		dies time.Duration // after the max runtime
	}{
		{"stops on the stop signal", &hangingJob{stopTake: 2 * time.Second}, 2 * time.Second},
		{"deaf to it: SIGKILL after the grace", &hangingJob{deaf: true}, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := blobsim.New()
				b, err := lease.NewLeaseBlob(lease.ClientConfig{Container: "leases", Blob: "nightly",
					ConnectionString: blobsim.ConnectionString, Transport: svc.Transport("a")})
				if err != nil {
					t.Fatal(err)
				}
				var logs bytes.Buffer
				log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
				const maxRuntime, grace = time.Minute, 10 * time.Second
				j := tc.job
				j.exitAfter(5 * time.Minute)
				err = Run(t.Context(), Options{Client: b,
					Lease:      lease.Config{KillGrace: grace, Identity: "vm-1", Logger: log},
					Argv:       []string{"job"},
					StopSignal: syscall.SIGTERM,
					MaxRuntime: maxRuntime,
					Launcher:   j,
					Signals:    make(chan os.Signal),
				})
				if code, _ := exit.Code(err); code != exit.Timeout || !strings.Contains(err.Error(), "max runtime reached (1m)") {
					t.Fatalf("err = %v (status %d), want status 124 and the max runtime named", err, code)
				}
				if len(j.stops) != 1 || j.stops[0].Sub(j.launched) != maxRuntime || j.graces[0] != grace {
					t.Errorf("stopped at %v with grace %v, want once, %s after the start, with %s", j.stops, j.graces, maxRuntime, grace)
				}
				if got := j.died.Sub(j.launched); got != maxRuntime+tc.dies {
					t.Errorf("died %s after the start, want %s", got, maxRuntime+tc.dies)
				}
				// Released at the instant of the death (requests take no
				// virtual time), after it.
				if ts := svc.Tenures("leases", "nightly"); len(ts) != 1 || ts[0].From.After(j.launched) || ts[0].Until.Before(j.died) {
					t.Errorf("the lease was held %+v; want one hold from before COMMAND's start to its death (%s)", ts, j.died.Sub(j.launched))
				}
				for _, d := range j.deadlines {
					if d.After(j.launched.Add(maxRuntime + grace)) {
						t.Errorf("the guard's kill deadline %s after the start is past the max runtime and the grace", d.Sub(j.launched))
					}
				}
				bl, _ := svc.Blob("leases", "nightly")
				if bl.Metadata["lastexit"] != "124" {
					t.Errorf("lastexit = %q, want 124", bl.Metadata["lastexit"])
				}
				if bl.State != "available" {
					t.Errorf("lease %s after the run, want it released", bl.State)
				}
				for _, line := range strings.Split(logs.String(), "\n") {
					if strings.Contains(line, "[ERROR]") || strings.Contains(line, "[WARN]") {
						t.Errorf("logged %q: the one line that says why is the caller's", line)
					}
				}
				if !strings.Contains(logs.String(), "max runtime reached; stopping the command") {
					t.Errorf("no line says why the command is stopped:\n%s", logs.String())
				}
			})
		})
	}
}
