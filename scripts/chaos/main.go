// Command chaos is leaderrun's chaos driver: N randomized fault-injection
// trials (see internal/testkit/chaos) against its own Azurite emulator, on loopback
// only, bounded in time, and a markdown table of what they measured. Run it
// through scripts/chaos.sh, or from the repository root:
//
//	go run ./scripts/chaos [-n 100] [-p 8] [-s all] [-slots N] [-seed N] [-timeout 30m]
//
// It starts Azurite with scripts/azurite.sh (in $AZURITE_STATE_DIR if set,
// else in its own temporary directory) and stops it at exit, builds
// leaderrun and the chaos child once, and runs the trials, PARALLEL at a
// time. Scenarios are dealt from a shuffled deck (each chosen scenario
// equally often, in random order); each trial draws its fault's start,
// length and variant. The same -seed, -n and -s replay the same trials.
//
// Exit status: 0 when every trial met its scenario's expectations; 1 when a
// trial did not (an overlap in scenarios 1–8, 10, 13 and 14, a lost survival, a missing
// exit 76, a leftover process, …); 2 when trials could not run (emulator,
// build, interruption, the time cap). The directories of failed trials are
// kept and named at the end.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/chaos"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

func main() { os.Exit(run(os.Args[1:])) }

type options struct {
	n, parallel  int
	scenarios    string
	seed         uint64
	limit        time.Duration
	trialTimeout time.Duration
	slots        int // -slots: every trial on a lease of this many slots
	keep         bool
}

func run(args []string) int {
	var o options
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.IntVar(&o.n, "n", 100, "number of trials")
	fs.IntVar(&o.parallel, "p", 8, "trials run at the same time")
	fs.StringVar(&o.scenarios, "s", "all", "scenarios: names or numbers, with ranges (1-7,freeze)")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed; 0 picks one (printed, to replay a run)")
	fs.DurationVar(&o.limit, "timeout", 30*time.Minute, "hard cap on the whole run")
	fs.DurationVar(&o.trialTimeout, "trial-timeout", 2*time.Minute, "cap on one trial")
	fs.IntVar(&o.slots, "slots", 1, "run every trial on a lease of this many slots (fillers hold the others); scenarios that touch every slot (break, storage-loss) are refused")
	fs.BoolVar(&o.keep, "keep", false, "keep every trial's directory (failed trials' are always kept)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	kinds, err := chaos.ParseKinds(o.scenarios)
	for _, k := range kinds {
		if err == nil && o.slots > 1 && !k.SlotsOK() {
			err = fmt.Errorf("scenario %s cannot run with -slots %d: its fault touches every slot", k, o.slots)
		}
	}
	if err == nil && (o.slots < 1 || o.slots > 50) {
		err = fmt.Errorf("-slots %d: use 1 to 50", o.slots)
	}
	if err != nil || o.n < 1 || o.parallel < 1 || o.limit <= 0 || o.trialTimeout <= 0 || fs.NArg() > 0 {
		if err == nil {
			err = errors.New("want -n ≥ 1, -p ≥ 1, positive -timeout and -trial-timeout, and no arguments")
		}
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	if o.seed == 0 {
		o.seed = rand.Uint64()
	}
	code, err := drive(o, kinds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
	}
	return code
}

// drive sets up, runs the trials, prints the table and returns the exit
// status.
//
// Long because it is the run's table of contents: set-up, the trial loop
// with its progress lines, the report and the cleanup, in order.
func drive(o options, kinds []chaos.Kind) (int, error) {
	start := time.Now()
	root, err := testenv.ModuleRoot()
	if err != nil {
		return 2, err
	}
	work, err := os.MkdirTemp("", "leaderrun-chaos-")
	if err != nil {
		return 2, err
	}
	keepWork := false
	defer func() {
		if !keepWork {
			_ = os.RemoveAll(work)
		}
	}()

	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stopSignals()
	ctx, cancel := context.WithTimeoutCause(ctx, o.limit, fmt.Errorf("the run's time cap (%s) was reached", o.limit))
	defer cancel()

	fmt.Fprintf(os.Stderr, "chaos: building leaderrun and the chaos child\n")
	bins := filepath.Join(work, "bin")
	lr, child := filepath.Join(bins, "leaderrun"), filepath.Join(bins, "chaoschild")
	if err := testenv.Build(ctx, root, ".", lr); err != nil {
		return 2, err
	}
	if err := testenv.Build(ctx, root, chaos.ChildPackage, child); err != nil {
		return 2, err
	}
	az, err := testenv.StartAzurite(ctx, root, work)
	if err != nil {
		return 2, err
	}
	defer az.Stop()
	env, err := chaos.NewEnv(az.ConnString, lr, child)
	if err != nil {
		return 2, err
	}

	trials := plan(o, kinds, filepath.Join(work, "trials"))
	fmt.Fprintf(os.Stderr, "chaos: %d trials of %s, %d at a time, seed %d, cap %s\n",
		len(trials), o.scenarios, o.parallel, o.seed, o.limit)
	results := runAll(ctx, env, trials, o.parallel)

	// The report.
	ran, failed, errored := 0, 0, 0
	safetyOverlap := false
	for _, r := range results {
		switch {
		case r == nil:
			continue
		case r.Err != nil:
			errored++
		case r.Failed():
			failed++
		}
		if r.Err == nil {
			ran++
		}
		if r.Err == nil && r.Kind.Safety() && r.Overlap.D > 0 {
			safetyOverlap = true
		}
	}
	var done []*chaos.Result
	for _, r := range results {
		if r != nil {
			done = append(done, r)
		}
	}
	slots := ""
	if o.slots > 1 {
		slots = fmt.Sprintf(" -slots %d", o.slots)
	}
	fmt.Printf("\n## leaderrun chaos run\n\n`scripts/chaos.sh -n %d -p %d -s %s%s -seed %d`: %d trials ran, %d failed, %d could not run; wall %s; %s, %d CPUs.\n\n",
		o.n, o.parallel, o.scenarios, slots, o.seed, ran, failed, errored, time.Since(start).Round(time.Second),
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU())
	fmt.Print(chaos.Table(chaos.Summarize(done)))
	fmt.Println()
	fmt.Print(chaos.Explanation)

	var kept []string
	for i, r := range results {
		if r == nil {
			continue
		}
		if r.Err != nil || r.Failed() {
			kept = append(kept, fmt.Sprintf("  %s: %s", trials[i].Dir, firstOr(r.Details(), "")))
		} else if !o.keep {
			_ = os.RemoveAll(r.Dir)
		}
	}
	if len(kept) > 0 || o.keep {
		keepWork = true
		_ = os.RemoveAll(bins)
		fmt.Fprintf(os.Stderr, "\nchaos: trial directories kept under %s\n%s\n", work, strings.Join(kept, "\n"))
	}
	notRun := len(trials) - len(done)
	switch {
	case safetyOverlap:
		fmt.Println("\nRESULT: FAIL — two children ran at once in scenarios 1–8, 10, 13 and 14.")
		return 1, nil
	case failed > 0:
		fmt.Println("\nRESULT: FAIL — some trials did not meet their scenario's expectations (see above).")
		return 1, nil
	case errored > 0 || notRun > 0:
		fmt.Printf("\nRESULT: INCOMPLETE — %d trials could not run, %d were not started.\n", errored, notRun)
		return 2, context.Cause(ctx)
	}
	fmt.Println("\nRESULT: PASS — no overlap in any scenario, every expectation met.")
	return 0, nil
}

// plan deals the scenarios from a shuffled deck and draws each trial's
// parameters from its own generator, so a trial depends only on the seed
// and its index.
func plan(o options, kinds []chaos.Kind, dir string) []chaos.Trial {
	deck := rand.New(rand.NewPCG(o.seed, 0))
	var order []chaos.Kind
	for len(order) < o.n {
		for _, i := range deck.Perm(len(kinds)) {
			if len(order) < o.n {
				order = append(order, kinds[i])
			}
		}
	}
	trials := make([]chaos.Trial, o.n)
	for i, k := range order {
		rng := rand.New(rand.NewPCG(o.seed, uint64(i)+1))
		trials[i] = chaos.Trial{
			Kind:    k,
			Params:  k.Random(rng),
			Dir:     filepath.Join(dir, fmt.Sprintf("%03d-%s", i+1, k)),
			Timeout: o.trialTimeout,
			Slots:   o.slots,
		}
	}
	return trials
}

// runAll runs the trials, parallel at a time, and prints a line for each as
// it ends. Trials not started when ctx ends have a nil result.
func runAll(ctx context.Context, env *chaos.Env, trials []chaos.Trial, parallel int) []*chaos.Result {
	results := make([]*chaos.Result, len(trials))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	finished := 0
	for range min(parallel, len(trials)) {
		wg.Go(func() {
			for i := range next {
				tr := trials[i]
				var r *chaos.Result
				if err := os.MkdirAll(tr.Dir, 0o755); err != nil {
					r = &chaos.Result{Trial: tr, Err: err}
				} else {
					r = chaos.Run(ctx, env, tr)
				}
				mu.Lock()
				results[i] = r
				finished++
				fmt.Fprintf(os.Stderr, "[%3d/%d] #%03d %d %-12s %s\n", finished, len(trials), i+1, int(tr.Kind), tr.Kind, r.Line())
				for _, d := range r.Details() {
					fmt.Fprintf(os.Stderr, "          %s\n", d)
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range trials {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return results
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}
