package leader

// The seam between the run flow and COMMAND's processes: Launcher, which
// runner satisfies for real, and a test's fake stands in for (a simulation
// of the whole flow runs thousands of runs with no process at all).

import (
	"os"
	"time"

	"github.com/leaderrun/leaderrun/runner"
)

// Launcher starts COMMAND. The run flow looks COMMAND up before touching
// storage, prepares it while acquiring, hands the kill deadline over before
// the go-ahead, and launches it once the lease is held.
type Launcher interface {
	// Lookup resolves argv0 as Prepare will; an error is a
	// *runner.ExecError (127, 126).
	Lookup(argv0 string) error
	// Prepare readies COMMAND without starting it (runner.Prepare).
	Prepare(cfg runner.Config) (Prepared, error)
}

// Prepared is a COMMAND ready to start (runner.Prepared).
type Prepared interface {
	// SetKillDeadline sets the deadline by which COMMAND must be dead,
	// in force from its first instant.
	SetKillDeadline(t time.Time) error
	// Launch starts COMMAND with env as its whole environment.
	Launch(env []string) (Process, error)
	// Discard ends it unstarted; it does nothing after Launch.
	Discard()
}

// Process is a started COMMAND (runner.Process).
type Process interface {
	Pid() int
	Done() <-chan struct{}
	Result() runner.Result
	Stop(grace time.Duration)
	HandleSignal(sig os.Signal)
	SetKillDeadline(t time.Time) error
}

// processes is the Launcher of real processes: runner's.
type processes struct{}

func (processes) Lookup(argv0 string) error { return runner.Lookup(argv0) }

func (processes) Prepare(cfg runner.Config) (Prepared, error) {
	p, err := runner.Prepare(cfg)
	if err != nil {
		return nil, err
	}
	return prepared{p}, nil
}

// prepared adapts *runner.Prepared, whose Launch returns a *runner.Process.
type prepared struct{ *runner.Prepared }

func (p prepared) Launch(env []string) (Process, error) {
	proc, err := p.Prepared.Launch(env)
	if err != nil {
		return nil, err
	}
	return proc, nil
}

var (
	_ Launcher = processes{}
	_ Process  = (*runner.Process)(nil)
)
