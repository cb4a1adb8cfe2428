package leader

import (
	"context"
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

// stopLauncher starts COMMANDs that run until stopped (Stop, or a
// terminating signal forwarded) and records how they were stopped.
type stopLauncher struct {
	mu       sync.Mutex
	stops    []time.Duration // the grace of every Stop, in order
	launched chan struct{}   // closed at the first Launch
	once     sync.Once
}

func newStopLauncher() *stopLauncher { return &stopLauncher{launched: make(chan struct{})} }

func (f *stopLauncher) Lookup(string) error { return nil }

func (f *stopLauncher) Prepare(runner.Config) (Prepared, error) { return stopPrepared{f}, nil }

type stopPrepared struct{ f *stopLauncher }

func (stopPrepared) SetKillDeadline(time.Time) error { return nil }
func (stopPrepared) Discard()                        {}
func (p stopPrepared) Launch([]string) (Process, error) {
	p.f.once.Do(func() { close(p.f.launched) })
	return &stopProcess{f: p.f, done: make(chan struct{})}, nil
}

func (f *stopLauncher) graces() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.stops...)
}

type stopProcess struct {
	f      *stopLauncher
	mu     sync.Mutex
	done   chan struct{}
	result runner.Result
}

func (*stopProcess) Pid() int                        { return 1 }
func (p *stopProcess) Done() <-chan struct{}         { return p.done }
func (*stopProcess) SetKillDeadline(time.Time) error { return nil }

func (p *stopProcess) Result() runner.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.result
}

// end ends the process by sig, once.
func (p *stopProcess) end(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
	default:
		p.result = runner.Result{ExitCode: -1, Signal: sig}
		close(p.done)
	}
}

func (p *stopProcess) Stop(grace time.Duration) {
	p.f.mu.Lock()
	p.f.stops = append(p.f.stops, grace)
	p.f.mu.Unlock()
	if grace <= 0 {
		p.end(syscall.SIGKILL)
		return
	}
	p.end(syscall.SIGTERM) // it exits on the stop signal
}

func (p *stopProcess) HandleSignal(s os.Signal) {
	if terminating(s) {
		p.end(s.(syscall.Signal))
	}
}

// heldHarness is one leaderrun run against the in-memory service, with
// its COMMAND launched and its log kept, driven by a test in a synctest
// bubble.
type heldHarness struct {
	svc  *blobsim.Service
	blob *lease.Blob // the test's own client of the same lease (the operator)
	f    *stopLauncher
	sigs chan os.Signal
	log  *strings.Builder
	done chan error
}

func startHeld(t *testing.T) *heldHarness {
	t.Helper()
	svc := blobsim.New()
	client := func(name string) *lease.Blob {
		b, err := lease.NewLeaseBlob(lease.ClientConfig{Container: "leases", Blob: "job",
			ConnectionString: blobsim.ConnectionString, Transport: svc.Transport(name)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	h := &heldHarness{svc: svc, blob: client("operator"), f: newStopLauncher(), sigs: make(chan os.Signal, 4),
		log: &strings.Builder{}, done: make(chan error, 1)}
	log := hclog.New(&hclog.LoggerOptions{Name: "leaderrun", Output: h.log, Level: hclog.Debug, DisableTime: true})
	o := Options{Client: client("vm-1"), Lease: lease.Config{KillGrace: 5 * time.Second, Identity: "vm-1", Logger: log},
		Argv: []string{"job"}, StopSignal: syscall.SIGTERM, ConflictCode: exit.Conflict, Launcher: h.f, Signals: h.sigs}
	go func() { h.done <- Run(context.Background(), o) }()
	<-h.f.launched
	synctest.Wait()
	return h
}

// end waits for the run's end and returns its error.
func (h *heldHarness) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("the run did not end; its log:\n%s", h.log)
		return nil
	}
}

// A leader whose lease an operator breaks, or drains, exits 76 after one
// line that says so, and only that one above info level.
func TestLostToAnOperatorSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain bool
		want  string
	}{
		{"break", false, `leadership of "job" was lost while the command ran: broken by an operator (leaderrun break; the renewal was answered 409 LeaseIsBrokenAndCannotBeRenewed); the command was stopped`},
		{"pause --drain", true, `leadership of "job" was lost while the command ran: drained by an operator (leaderrun pause --drain, reason "moving"); the command was stopped`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startHeld(t)
				ctx := context.Background()
				if tc.drain {
					_, date, err := h.blob.ReadPause(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := h.blob.WritePause(ctx, lease.Pause{Reason: "moving", Since: date, Drain: true}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := h.blob.BreakLease(ctx, lease.BreakAtPeriodEnd); err != nil {
					t.Fatal(err)
				}
				err := h.end(t)
				if code, _ := exit.Code(err); code != exit.Lost || err.Error() != tc.want {
					t.Fatalf("err = %v (status %d), want status 76 and\n%s", err, code, tc.want)
				}
				for line := range strings.Lines(h.log.String()) {
					if strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
						t.Errorf("a line above info before the exit's own: %s", line)
					}
				}
			})
		})
	}
}

// systemd's watchdog: COMMAND's group is killed at once (not asked to
// stop), the lease is released, one ERROR line, and leaderrun ends by
// SIGABRT.
func TestWatchdogKillsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHeld(t)
		h.sigs <- watchdogSignal
		err := h.end(t)
		if sig := exit.SignalOf(err); sig != syscall.SIGABRT {
			t.Fatalf("err = %v, ends by %v, want SIGABRT", err, sig)
		}
		if g := h.f.graces(); len(g) == 0 || g[0] > 0 {
			t.Errorf("stops %v, want SIGKILL at once first", g)
		}
		if b, _ := h.svc.Blob("leases", "job"); b.State == blobsim.Leased {
			t.Errorf("the lease is still held after the run: %s", b.State)
		}
		if n := strings.Count(h.log.String(), "[ERROR]"); n != 1 || !strings.Contains(h.log.String(), "the systemd watchdog fired") {
			t.Errorf("%d ERROR lines, want the watchdog's one:\n%s", n, h.log)
		}
	})
}

// A watchdog signal that came with COMMAND's end, which the loop did not
// look at, still counts; the other signals pending then are dropped.
func TestPendingWatchdogCounts(t *testing.T) {
	f := newStopLauncher()
	p := &stopProcess{f: f, done: make(chan struct{})}
	sigs := make(chan os.Signal, 4)
	sigs <- syscall.SIGUSR1
	sigs <- watchdogSignal
	sigs <- syscall.SIGTERM
	log := hclog.NewNullLogger()
	h := &heldRun{invocation: &invocation{log: log, sd: newNotifier(log), sigs: sigs}, l: &lease.Lease{Name: "job"},
		proc: p, stopHealth: func() {}}
	h.pendingWatchdog()
	if !h.watchdog {
		t.Fatal("the pending watchdog signal was not taken")
	}
	if g := f.graces(); len(g) != 1 || g[0] > 0 {
		t.Errorf("stops %v, want SIGKILL at once", g)
	}
	h = &heldRun{invocation: &invocation{log: log, sd: newNotifier(log), sigs: sigs}, l: &lease.Lease{Name: "job"},
		proc: p, stopHealth: func() {}}
	h.pendingWatchdog() // only SIGTERM is left, and then nothing: no wait
	if h.watchdog || len(sigs) != 0 {
		t.Errorf("watchdog %v, %d signals left", h.watchdog, len(sigs))
	}
}
