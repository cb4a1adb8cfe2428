package leader

import (
	"errors"
	"os"
	"slices"
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

// fakeLauncher records what the run flow asks of COMMAND's guards; the
// first prepared guards of fails dies before its go-ahead.
type fakeLauncher struct {
	fails int
	calls []string
}

func (f *fakeLauncher) Lookup(string) error { return nil }

func (f *fakeLauncher) Prepare(runner.Config) (Prepared, error) {
	f.calls = append(f.calls, "prepare")
	dies := f.fails > 0
	f.fails--
	return &fakePrepared{f: f, dies: dies}, nil
}

type fakePrepared struct {
	f        *fakeLauncher
	dies     bool
	deadline bool
}

func (p *fakePrepared) SetKillDeadline(time.Time) error {
	p.f.calls = append(p.f.calls, "deadline")
	p.deadline = true
	return nil
}

func (p *fakePrepared) Launch([]string) (Process, error) {
	if p.dies {
		p.f.calls = append(p.f.calls, "launch: the guard has gone")
		return nil, errors.New("the prepared guard has gone")
	}
	if !p.deadline {
		p.f.calls = append(p.f.calls, "launch without a deadline")
	} else {
		p.f.calls = append(p.f.calls, "launch")
	}
	return &fakeProcess{p: p, done: make(chan struct{})}, nil
}

func (p *fakePrepared) Discard() { p.f.calls = append(p.f.calls, "discard") }

type fakeProcess struct {
	p    *fakePrepared
	done chan struct{}
}

func (*fakeProcess) Pid() int                          { return 1 }
func (c *fakeProcess) Done() <-chan struct{}           { return c.done }
func (*fakeProcess) Result() runner.Result             { return runner.Result{} }
func (*fakeProcess) Stop(time.Duration)                {}
func (*fakeProcess) HandleSignal(os.Signal)            {}
func (c *fakeProcess) SetKillDeadline(time.Time) error { return c.p.SetKillDeadline(time.Time{}) }

// farDeadlines are a lease's deadlines a minute away.
type farDeadlines struct{}

func (farDeadlines) StopAt() time.Time { return time.Now().Add(time.Minute) }
func (farDeadlines) KillBy() time.Time { return time.Now().Add(time.Minute) }

// COMMAND starts with its kill deadline in force from its first instant,
// in the prepared guard or, when that one died, in a new one.
func TestStartedWithTheDeadline(t *testing.T) {
	for _, fails := range []int{0, 1} {
		f := &fakeLauncher{fails: fails}
		hs := &headStart{log: hclog.NewNullLogger(), launcher: f}
		hs.prepare()
		if _, err := hs.start(nil, farDeadlines{}); err != nil {
			t.Fatal(err)
		}
		want := []string{"prepare", "deadline", "launch"}
		if fails > 0 {
			want = []string{"prepare", "deadline", "launch: the guard has gone", "discard", "prepare", "deadline", "launch"}
		}
		if !slices.Equal(f.calls, want) {
			t.Errorf("with %d failed guard(s): %q, want %q", fails, f.calls, want)
		}
	}
}

// COMMAND never starts on a lease past its stop deadline (leaderrun
// stopped or starved since the acquire): nothing runs, the claim is taken
// back, exit 76.
func TestNoStartPastTheStopDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := blobsim.New()
		b, err := lease.NewLeaseBlob(lease.ClientConfig{Container: "leases", Blob: "job",
			ConnectionString: blobsim.ConnectionString, Transport: svc.Transport("a")})
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Client: b, Lease: lease.Config{KillGrace: 5 * time.Second, Identity: "a", Logger: hclog.NewNullLogger()},
			Argv: []string{"job"}, StopSignal: syscall.SIGTERM, OncePer: time.Hour}
		e, err := lease.NewElector(b, o.Lease)
		if err != nil {
			t.Fatal(err)
		}
		l, err := e.Acquire(t.Context(), lease.WaitOptions{NoWait: true, OncePer: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(l.StopAt())) // leaderrun stopped until the stop deadline
		f := &fakeLauncher{}
		inv := &invocation{log: hclog.NewNullLogger(), o: &o, elector: e, sd: newNotifier(hclog.NewNullLogger()),
			hs: &headStart{log: hclog.NewNullLogger(), launcher: f}, mon: newRunMonitor(hclog.NewNullLogger(), &o)}
		h := &heldRun{invocation: inv, l: l}
		err = h.start(t.Context())
		if code, _ := exit.Code(err); code != exit.Lost {
			t.Errorf("err = %v (status %d), want status %d", err, code, exit.Lost)
		}
		if len(f.calls) != 0 {
			t.Errorf("the run flow asked %q of COMMAND's guard, want nothing", f.calls)
		}
		if bl, _ := svc.Blob("leases", "job"); bl.Metadata["lastrunstart"] != "" {
			t.Errorf("the claim stands: %v", bl.Metadata)
		}
	})
}
