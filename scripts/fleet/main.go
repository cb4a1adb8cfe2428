// Command fleet is leaderrun's fleet-scale benchmark: a whole scale set's
// cron lines reaching one lease blob in the same second, behind a proxy
// that throttles the blob the way the storage service does (a token bucket
// per blob, 503 ServerBusy beyond it). Run it through scripts/fleet.sh, or
// from the repository root:
//
//	go run ./scripts/fleet [-cases 1000/200@500,100/100@10] [-splay 0] [-timeout 10m]
//
// A case N/P@R is N contenders, P of them real leaderrun processes running
// the README's cron recipe (--no-wait -E 0 --once-per 4m -q) and the rest
// goroutines driving the lease package the way that recipe does, all let
// go at one instant, against a lease whose last run is an hour old, behind
// R requests/s per blob. It prints, per case: runs of COMMAND (must be 1),
// non-zero exits (must be 0), lines written under -q (must be 0), requests
// per contender, and the time until the last contender was done.
//
// Everything runs on loopback (the Azurite emulator started with
// scripts/azurite.sh, and the fault proxy); every process it starts is
// stopped by its pid, and the run is capped by -timeout. Exit status: 0 when
// every case met the musts, 1 when one did not, 2 when a case could not run.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/hashicorp/go-hclog"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
	"github.com/leaderrun/leaderrun/lease"
)

func main() { os.Exit(run(os.Args[1:])) }

// fleetCase is one row: n contenders, procs of them processes, behind rate.
type fleetCase struct {
	n, procs int
	rate     float64
}

func parseCases(s string) ([]fleetCase, error) {
	var out []fleetCase
	for _, item := range strings.Split(s, ",") {
		var c fleetCase
		if _, err := fmt.Sscanf(item, "%d/%d@%g", &c.n, &c.procs, &c.rate); err != nil || c.n < 1 || c.procs < 0 || c.procs > c.n || c.rate <= 0 {
			return nil, fmt.Errorf("fleet: bad case %q: want N/PROCESSES@RATE, e.g. 1000/200@500", item)
		}
		out = append(out, c)
	}
	return out, nil
}

// result is what one case measured.
type result struct {
	fleetCase
	runs, nonZero, lines int
	requests, throttled  int64
	last                 time.Duration // until the last contender was done
	err                  string
	said                 []string // what contenders logged under -q (the first few lines)
}

func (r result) ok() bool { return r.err == "" && r.runs == 1 && r.nonZero == 0 && r.lines == 0 }

func run(args []string) int {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	cases := fs.String("cases", "1000/200@500,100/100@10", "cases N/PROCESSES@RATE, comma-separated")
	splay := fs.Duration("splay", 0, "--splay of every contender (0: all in the same instant)")
	limit := fs.Duration("timeout", 10*time.Minute, "hard cap of the whole run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cs, err := parseCases(*cases)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *limit)
	defer cancel()
	root, err := testenv.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 2
	}
	work, err := os.MkdirTemp("", "leaderrun-fleet-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 2
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "leaderrun")
	if err := testenv.Build(ctx, root, ".", bin); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 2
	}
	az, err := testenv.StartAzurite(ctx, root, work)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 2
	}
	defer az.Stop()

	var results []result
	for i, c := range cs {
		fmt.Fprintf(os.Stderr, "fleet: %d contenders (%d processes) behind %g requests/s per blob...\n", c.n, c.procs, c.rate)
		r := runCase(ctx, bin, &az.Storage, filepath.Join(work, strconv.Itoa(i)), c, *splay)
		results = append(results, r)
	}
	report(results, *splay)
	status := 0
	for _, r := range results {
		switch {
		case r.err != "":
			status = 2
		case !r.ok() && status == 0:
			status = 1
		}
	}
	return status
}

// runCase prepares a lease whose last run is an hour old, puts a throttling
// proxy in front of the emulator, and lets every contender go at once.
func runCase(ctx context.Context, bin string, st *testenv.Storage, dir string, c fleetCase, splay time.Duration) result {
	r := result{fleetCase: c}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.err = err.Error()
		return r
	}
	containerName := "fleet-" + testenv.RandHex(6)
	const leaseName = "cron/report"
	if err := prepare(ctx, st.ConnString, containerName, leaseName); err != nil {
		r.err = "prepare: " + err.Error()
		return r
	}
	p, err := faultproxy.New(st.Target)
	if err != nil {
		r.err = err.Error()
		return r
	}
	defer p.Close()
	p.Set(faultproxy.Mode{Throttle: faultproxy.Throttle{Rate: c.rate}})
	viaProxy := strings.Replace(st.ConnString, st.Target, p.URL(), 1)

	var (
		runs    atomic.Int64
		nonZero atomic.Int64
		lines   atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		lastEnd time.Time
	)
	done := func() {
		mu.Lock()
		lastEnd = time.Now()
		mu.Unlock()
	}
	runsFile := filepath.Join(dir, "runs")

	// The processes: the README's cron recipe, each with its own stderr.
	type proc struct {
		cmd    *exec.Cmd
		stderr *bytes.Buffer
	}
	procs := make([]proc, 0, c.procs)
	for i := range c.procs {
		argv := []string{"-l", leaseName, "--container", containerName, "--identity", fmt.Sprintf("vm-%04d", i),
			"--no-wait", "-E", "0", "--once-per", "4m", "-q"}
		if splay > 0 {
			argv = append(argv, "--splay", splay.String())
		}
		argv = append(argv, "--", "sh", "-c", "echo \"$LEADERRUN_IDENTITY\" >>"+runsFile+"; sleep 2")
		cmd := exec.CommandContext(ctx, bin, argv...)
		cmd.Env = append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+viaProxy)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		var buf bytes.Buffer
		cmd.Stderr, cmd.Stdout = &buf, &buf
		procs = append(procs, proc{cmd, &buf})
	}

	// The goroutines: the lease package as the recipe drives it (-E 0 -q:
	// a refused acquire is enough), logging at error level only.
	start := make(chan struct{})
	for i := c.procs; i < c.n; i++ {
		cli, err := lease.NewLeaseBlob(lease.ClientConfig{ConnectionString: viaProxy, Container: containerName, Blob: leaseName})
		if err != nil {
			r.err = err.Error()
			return r
		}
		logOut := &lineCounter{n: &lines, say: func(line string) {
			mu.Lock()
			if len(r.said) < 5 {
				r.said = append(r.said, line)
			}
			mu.Unlock()
		}}
		log := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: logOut})
		e, err := lease.NewElector(cli, lease.Config{Duration: 15 * time.Second, Identity: fmt.Sprintf("vm-%04d", i), Version: "fleet", Logger: log})
		if err != nil {
			r.err = err.Error()
			return r
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done()
			<-start
			if splay > 0 {
				time.Sleep(rand.N(splay))
			}
			l, err := e.Acquire(ctx, lease.WaitOptions{NoWait: true, OncePer: 4 * time.Minute, HeldIsEnough: true, ReadFirst: splay > 0})
			switch {
			case err == nil:
				runs.Add(1)
				l.Keep(ctx)
				time.Sleep(2 * time.Second)
				if err := l.RecordRunEnd(ctx, 0); err != nil {
					log.Error("record run end", "error", err)
				}
				if err := l.Release(ctx); err != nil {
					log.Error("release", "error", err)
				}
			case errors.Is(err, lease.ErrHeld), errors.Is(err, lease.ErrSkipped):
			default:
				log.Error("acquire", "error", err)
				nonZero.Add(1)
			}
		}()
	}

	t0 := time.Now()
	for i := range procs {
		if err := procs[i].cmd.Start(); err != nil {
			r.err = err.Error()
			close(start)
			wg.Wait()
			return r
		}
	}
	close(start)
	for _, q := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done()
			if err := q.cmd.Wait(); err != nil {
				nonZero.Add(1)
			}
			lines.Add(int64(bytes.Count(q.stderr.Bytes(), []byte("\n"))))
			if out := strings.TrimSpace(q.stderr.String()); out != "" {
				mu.Lock()
				if len(r.said) < 5 {
					r.said = append(r.said, strings.Split(out, "\n")...)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	r.last = lastEnd.Sub(t0)
	mu.Unlock()
	if b, err := os.ReadFile(runsFile); err == nil {
		runs.Add(int64(bytes.Count(b, []byte("\n"))))
	}
	n := p.Counts()
	r.runs, r.nonZero, r.lines = int(runs.Load()), int(nonZero.Load()), int(lines.Load())
	r.requests, r.throttled = n.Reads+n.Writes, n.Throttled
	return r
}

// prepare creates the lease blob with a run that started an hour ago: the
// once-per window is open, as at any cron tick after the first.
func prepare(ctx context.Context, connString, containerName, blobName string) error {
	cc, err := container.NewClientFromConnectionString(connString, containerName, nil)
	if err != nil {
		return err
	}
	if _, err := cc.Create(ctx, nil); err != nil {
		return err
	}
	hourAgo := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	end := time.Now().Add(-59 * time.Minute).UTC().Format(time.RFC3339)
	md := map[string]*string{"holder": ptr("vm-0000"), "term": ptr("1"), "lastrunstart": &hourAgo, "lastrunend": &end,
		"lastrunholder": ptr("vm-0000"), "lastrunterm": ptr("1"), "lastexit": ptr("0"), "leaseduration": ptr("15")}
	_, err = cc.NewBlockBlobClient(blobName).UploadBuffer(ctx, nil, &blockblob.UploadBufferOptions{Metadata: md})
	return err
}

func ptr(s string) *string { return &s }

// lineCounter counts the lines written to it, and hands each to say.
type lineCounter struct {
	n   *atomic.Int64
	say func(line string)
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n.Add(int64(bytes.Count(p, []byte("\n"))))
	c.say(strings.TrimSpace(string(p)))
	return len(p), nil
}

func report(results []result, splay time.Duration) {
	fmt.Printf("\n`scripts/fleet.sh`%s, %s, %d CPUs:\n\n", splayNote(splay), time.Now().UTC().Format("2006-01-02"), runtime.NumCPU())
	fmt.Println("| contenders (processes) | limit per blob | runs (must be 1) | non-zero exits (must be 0) | lines under -q (must be 0) | requests per contender (target ≤ 3) | throttled | last contender done (target ≤ 30 s) |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		if r.err != "" {
			fmt.Printf("| %d (%d) | %g/s | could not run: %s |||||\n", r.n, r.procs, r.rate, r.err)
			continue
		}
		fmt.Printf("| %d (%d) | %g/s | %d | %d | %d | %.2f | %d | %.1f s |\n", r.n, r.procs, r.rate, r.runs, r.nonZero, r.lines,
			float64(r.requests)/float64(r.n), r.throttled, r.last.Seconds())
	}
	for _, r := range results {
		for _, line := range r.said {
			fmt.Fprintf(os.Stderr, "fleet: %d (%d) at %g/s: a contender said: %s\n", r.n, r.procs, r.rate, line)
		}
	}
}

func splayNote(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return " with --splay " + d.String()
}
