package leader

import (
	"bytes"
	"context"
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

// jobs is a Launcher whose COMMAND records its environment and exits with
// code after took; inside a synctest bubble, on its virtual time.
type jobs struct {
	mu   sync.Mutex
	code int
	took time.Duration
	envs []map[string]string
}

func (j *jobs) Lookup(string) error                     { return nil }
func (j *jobs) Prepare(runner.Config) (Prepared, error) { return &job{j: j}, nil }

// launched is the environment of every COMMAND launched so far.
func (j *jobs) launched() []map[string]string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]map[string]string(nil), j.envs...)
}

type job struct {
	j    *jobs
	done chan struct{}
	res  runner.Result
}

func (p *job) SetKillDeadline(time.Time) error { return nil } // Prepared's and Process's
func (p *job) Discard()                        {}
func (p *job) Launch(env []string) (Process, error) {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "LEADERRUN_") {
			m[k] = v
		}
	}
	p.j.mu.Lock()
	p.j.envs = append(p.j.envs, m)
	code, took := p.j.code, p.j.took
	p.j.mu.Unlock()
	p.done, p.res = make(chan struct{}), runner.Result{ExitCode: code}
	time.AfterFunc(took, func() { close(p.done) })
	return p, nil
}
func (p *job) Pid() int               { return 1 }
func (p *job) Done() <-chan struct{}  { return p.done }
func (p *job) Result() runner.Result  { <-p.done; return p.res }
func (p *job) Stop(time.Duration)     {}
func (p *job) HandleSignal(os.Signal) {}

// fleet is a lease in an in-memory service, and the lines that run on it.
type fleet struct {
	t    *testing.T
	svc  *blobsim.Service
	jobs *jobs
	n    int
}

func newFleet(t *testing.T) *fleet {
	return &fleet{t: t, svc: blobsim.New(), jobs: &jobs{took: 5 * time.Second}}
}

func (f *fleet) blob(client string) *lease.Blob {
	f.t.Helper()
	b, err := lease.NewLeaseBlob(lease.ClientConfig{Container: "leases", Blob: "job",
		ConnectionString: blobsim.ConnectionString, Transport: f.svc.Transport(client)})
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// run is one invocation of the line set, as host vm-N: its exit status
// and its log.
func (f *fleet) run(set func(o *Options)) (int, string) {
	f.t.Helper()
	f.n++
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Debug})
	id := "vm-" + string(rune('0'+f.n%10))
	o := Options{Client: f.blob(id), Lease: lease.Config{KillGrace: time.Second, Identity: id, Logger: log},
		Argv: []string{"job"}, StopSignal: syscall.SIGTERM, ConflictCode: exit.Conflict, NoWait: true,
		StorageTimeout: time.Minute, Launcher: f.jobs, Signals: make(chan os.Signal)}
	set(&o)
	err := Run(context.Background(), o)
	code, ok := exit.Code(err)
	if !ok && err != nil {
		f.t.Fatalf("Run: %v", err)
	}
	return code, buf.String()
}

// props is the lease blob as stored.
func (f *fleet) props() *lease.Properties {
	f.t.Helper()
	b, ok := f.svc.Blob("leases", "job")
	if !ok {
		f.t.Fatal("no lease blob")
	}
	return lease.PropertiesOf(lease.StateAvailable, b.Metadata, time.Now())
}

// sleepUntil sleeps until t (virtual time).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }
