package leader

import (
	"slices"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/internal/testkit/blobsim"
	"github.com/leaderrun/leaderrun/lease"
	"github.com/leaderrun/leaderrun/runner"
)

// slowLauncher is fakeLauncher whose guards take a while to start, as a
// whole process's start does on a starved host.
type slowLauncher struct {
	fakeLauncher
	slow     time.Duration
	launchAt time.Time // when the go-ahead was asked for
}

func (s *slowLauncher) Prepare(cfg runner.Config) (Prepared, error) {
	time.Sleep(s.slow)
	p, err := s.fakeLauncher.Prepare(cfg)
	if err != nil {
		return nil, err
	}
	return &timedPrepared{Prepared: p, s: s}, nil
}

type timedPrepared struct {
	Prepared
	s *slowLauncher
}

func (p *timedPrepared) Launch(env []string) (Process, error) {
	p.s.launchAt = time.Now()
	return p.Prepared.Launch(env)
}

// COMMAND never starts at or after its lease's stop deadline (StopAt's
// doc), also when no guard was prepared while acquiring and the one
// started then takes a while: start checks the deadline before preparing
// the guard, not before the go-ahead, so COMMAND starts past it (then
// gets the stop signal at once, its run recorded, its window spent).
func TestNoStartPastTheStopDeadlineSlowGuard(t *testing.T) {
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
		time.Sleep(time.Until(l.StopAt()) - time.Second) // leaderrun starved, not yet past the deadline
		stopAt := l.StopAt()
		f := &slowLauncher{slow: 2 * time.Second} // no head start: the guard starts now, slowly
		inv := &invocation{log: hclog.NewNullLogger(), o: &o, elector: e, sd: newNotifier(hclog.NewNullLogger()),
			hs: &headStart{log: hclog.NewNullLogger(), launcher: f}, mon: newRunMonitor(hclog.NewNullLogger(), &o)}
		h := &heldRun{invocation: inv, l: l}
		_ = h.start(t.Context())
		if slices.Contains(f.calls, "launch") && !f.launchAt.Before(stopAt) {
			t.Errorf("COMMAND's go-ahead %v after the lease's stop deadline", f.launchAt.Sub(stopAt))
		}
		h.release()
	})
}
