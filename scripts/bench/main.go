// Command bench is leaderrun's benchmark driver: it measures leaderrun side
// by side with what a user would pick instead (flock(1) on one host, etcdctl
// lock against etcd), in the same run, on this machine, and prints markdown
// tables of medians and 95th percentiles. Run it through scripts/bench.sh, or
// from the repository root:
//
//	go run ./scripts/bench [-quick] [-timeout 15m] [-etcd=false] [prices…]
//
// Everything runs on loopback: the Azurite emulator (started with
// scripts/azurite.sh, in $AZURITE_STATE_DIR if set, else in its own
// temporary directory), an etcd it starts on free ports when etcd is
// installed, and counting proxies (internal/testkit/faultproxy). Every process it
// starts leads its own process group, has a parent-death signal, and is
// stopped by its pid at the end; the whole run is capped by -timeout.
//
// The figures:
//
//  1. start cost: `leaderrun -l x -- true` on a free lease, against
//     `flock FILE true` and `etcdctl lock x true`, and where leaderrun's
//     time goes;
//  2. graceful handover: the leader gets SIGTERM, until the successor's
//     child starts: at the default flags (the successor is the deputy),
//     at poll intervals without a deputy, and etcd's watch-based handover;
//  3. crash failover: kill -9 of the leader, until the successor's child
//     starts, and how long the crashed leader's child lived on;
//  4. storage requests per hour of a leader, its deputy, another waiting
//     follower and followers without a deputy, and what they cost a month
//     at the given prices;
//  5. footprint: peak RSS and CPU of a leading leaderrun, its guard and a
//     waiting follower over the same window, and the binary's size;
//  6. many contenders: 50 and 200 leaderrun processes on one lease, each
//     running a short child; exactly one child at every instant, the
//     handover between them, the request rate the storage sees, and a
//     model for 1,000;
//  7. this tree's binary (storage through azblob) against the build of an
//     earlier commit (-previous, by default the last REST client), `-- true`
//     and `version` interleaved, and both binaries' sizes.
//
// Exit status: 0 when every figure was measured, 1 when a safety check
// failed (two children at once), 2 when figures could not be measured.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

func main() { os.Exit(run(os.Args[1:])) }

// options are the command line's.
type options struct {
	quick        bool
	limit        time.Duration
	useEtcd      bool
	keep         bool
	rounds       int           // start-cost rounds
	handovers    int           // handovers per poll interval
	failovers    int           // crash trials of leaderrun
	window       time.Duration // requests and footprint window
	crowds       []int         // contender counts
	crowdPoll    time.Duration
	crowdRun     time.Duration
	crowdWatch   time.Duration // request-rate window with every contender waiting
	rtt          time.Duration // latency added per request in the start-cost breakdown
	hoRTT        time.Duration // latency added per request in the handover figure
	prices       prices
	leaderrun    string // a prebuilt binary to measure instead of the tree's
	polls        []time.Duration
	only         map[string]bool // figures to run; nil means all
	previous     string          // the commit figure 7 compares with
	previousRuns int             // figure 7's rounds
}

// figures are the names -only takes.
var figures = []string{"start", "handover", "failover", "steady", "crowd", "previous", "slots"}

func (o options) runs(figure string) bool { return o.only == nil || o.only[figure] }

// prices are USD per 10,000 operations, by Azure's billing category.
type prices struct {
	write, read, other, list float64
}

func run(args []string) int {
	o, err := parseOptions(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	code, err := drive(o, args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	return code
}

// parseOptions reads the bench's flags. It is long because it is one flag
// declaration a line, with their checks.
func parseOptions(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.BoolVar(&o.quick, "quick", false, "a short smoke run (≲ 2 min): fewer rounds, a 15 s window, 20 contenders")
	fs.DurationVar(&o.limit, "timeout", 0, "hard cap on the whole run (default 15m, 4m with -quick)")
	fs.BoolVar(&o.useEtcd, "etcd", true, "measure etcd side by side when etcd and etcdctl are installed")
	fs.BoolVar(&o.keep, "keep", false, "keep the working directory (logs, records)")
	runs := fs.Int("runs", 0, "start-cost rounds (default 60, 10 with -quick)")
	handovers := fs.Int("handovers", 0, "graceful handovers per poll interval (default 30, 4 with -quick)")
	failovers := fs.Int("failovers", 0, "crash failover trials, run side by side (default 6, 2 with -quick)")
	window := fs.Duration("window", 0, "window of the requests and footprint figures (default 60s, 15s with -quick)")
	crowds := fs.String("contenders", "", "contender counts, comma-separated (default 50,200; 20 with -quick)")
	fs.DurationVar(&o.crowdPoll, "contender-poll", 2*time.Second, "the contenders' --poll-interval")
	fs.DurationVar(&o.crowdRun, "contender-run", 200*time.Millisecond, "how long each contender's child runs")
	polls := fs.String("polls", "200ms,2s", "the poll intervals of the graceful handover figure's followers without a deputy (the default flags' row, with the deputy, always runs)")
	only := fs.String("only", "", "run only these figures, comma-separated: "+strings.Join(figures, ", "))
	fs.DurationVar(&o.rtt, "rtt", 5*time.Millisecond, "latency added to each request in the start-cost breakdown's last row")
	fs.DurationVar(&o.hoRTT, "handover-rtt", 0, "latency added to each request of the graceful handover figure (as a network round trip would)")
	fs.StringVar(&o.previous, "previous", "d2c721f", "the commit whose build figure 7 compares with (the last REST client by default)")
	previousRuns := fs.Int("previous-runs", 0, "figure 7's rounds (default 40, 10 with -quick)")
	fs.StringVar(&o.leaderrun, "leaderrun", "", "measure this leaderrun binary instead of one built from the tree (to compare a patch)")
	fs.Float64Var(&o.prices.write, "price-write", 0.055, "USD per 10,000 write operations (hot tier)")
	fs.Float64Var(&o.prices.read, "price-read", 0.0044, "USD per 10,000 read operations (hot tier)")
	fs.Float64Var(&o.prices.other, "price-other", 0.0044, "USD per 10,000 \"all other\" operations (hot tier)")
	fs.Float64Var(&o.prices.list, "price-list", 0.055, "USD per 10,000 list and create container operations (hot tier)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	pick := func(v *int, full, quick int) int {
		switch {
		case *v > 0:
			return *v
		case o.quick:
			return quick
		}
		return full
	}
	o.rounds = pick(runs, 60, 10)
	o.handovers = pick(handovers, 30, 4)
	o.failovers = pick(failovers, 6, 2)
	o.previousRuns = pick(previousRuns, 40, 10)
	o.window = *window
	if o.window <= 0 {
		o.window = 60 * time.Second
		if o.quick {
			o.window = 15 * time.Second
		}
	}
	o.crowdWatch = 10 * time.Second
	if o.quick {
		o.crowdWatch = 5 * time.Second
	}
	spec := *crowds
	if spec == "" {
		spec = "50,200"
		if o.quick {
			spec = "20"
		}
	}
	for part := range strings.SplitSeq(spec, ",") {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(part), "%d", &n); err != nil || n < 2 || n > 500 {
			return o, fmt.Errorf("-contenders %q: want counts from 2 to 500", spec)
		}
		o.crowds = append(o.crowds, n)
	}
	for part := range strings.SplitSeq(*polls, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d < 100*time.Millisecond {
			return o, fmt.Errorf("-polls %q: want durations of at least 100ms", *polls)
		}
		o.polls = append(o.polls, d)
	}
	if *only != "" {
		o.only = map[string]bool{}
		for part := range strings.SplitSeq(*only, ",") {
			name := strings.TrimSpace(part)
			if !slices.Contains(figures, name) {
				return o, fmt.Errorf("-only %q: figures are %s", *only, strings.Join(figures, ", "))
			}
			o.only[name] = true
		}
	}
	if o.limit <= 0 {
		o.limit = 15 * time.Minute
		if o.quick {
			o.limit = 4 * time.Minute
		}
	}
	if o.crowdPoll < 100*time.Millisecond || o.crowdRun <= 0 || o.window < 5*time.Second || o.rtt < 0 || o.hoRTT < 0 {
		return o, errors.New("want -contender-poll ≥ 100ms, -contender-run > 0, -window ≥ 5s, -rtt and -handover-rtt ≥ 0")
	}
	return o, nil
}

// bench is one run's shared state.
type bench struct {
	o         options
	root      string
	work      string
	bin       binaries
	az        *testenv.Emulator
	azVersion string // the pinned Azurite version
	etcd      *etcdServer
	etcdWhy   string // why etcd's columns are n/a
	container string // every lease of the run lives in this container
	tick      time.Duration
	mach      machine

	mu    sync.Mutex
	procs []*testenv.Process
}

// results are the figures, each with the reason it could not be measured.
type results struct {
	start     *startResult
	handover  []handoverResult
	failover  *failoverResult
	steady    *steadyResult
	crowds    []crowdResult
	slots     []crowdResult // slots.go: one slot and several, side by side
	previous  *previousResult
	sizes     sizes
	wall      time.Duration
	unsafe    []string // safety checks that failed
	incomplet []string // figures that could not be measured
}

// drive builds the binaries, starts the emulator, measures the figures the
// options ask for and prints the report. Long because it is the bench's
// table of contents: one short step per figure, in order.
func drive(o options, args []string) (int, error) {
	begin := time.Now()
	root, err := testenv.ModuleRoot()
	if err != nil {
		return 2, err
	}
	work, err := os.MkdirTemp("", "leaderrun-bench-")
	if err != nil {
		return 2, err
	}
	b := &bench{o: o, root: root, work: work, container: "bench-" + testenv.RandHex(6), tick: clockTick(), mach: describeMachine()}
	defer func() {
		if o.keep {
			fmt.Fprintf(os.Stderr, "bench: working directory kept: %s\n", work)
			return
		}
		_ = os.RemoveAll(work)
	}()

	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stopSignals()
	ctx, cancel := context.WithTimeoutCause(ctx, o.limit, fmt.Errorf("the run's time cap (%s) was reached", o.limit))
	defer cancel()

	progress("building leaderrun and the chaos child")
	if b.bin, err = build(ctx, root, filepath.Join(work, "bin")); err != nil {
		return 2, err
	}
	if o.leaderrun != "" {
		if _, err := os.Stat(o.leaderrun); err != nil {
			return 2, err
		}
		b.bin.leaderrun = absPath(o.leaderrun)
	}
	progress("starting Azurite")
	if b.az, err = testenv.StartAzurite(ctx, root, work); err != nil {
		return 2, err
	}
	b.azVersion = azuriteVersion(root)
	defer b.az.Stop()
	defer b.stopAll() // before the emulator stops (defers run last-in first-out)
	if o.useEtcd {
		progress("starting etcd")
		b.etcd, b.etcdWhy = b.startEtcd(ctx)
		if b.etcd == nil {
			progress("etcd columns will be n/a: " + b.etcdWhy)
		}
	} else {
		b.etcdWhy = "-etcd=false"
	}

	var res results
	res.sizes = measureSizes(b.bin)

	if o.runs("start") {
		progress("1/7 start cost")
		res.start = b.startCost(ctx)
	}
	if o.runs("handover") && ctx.Err() == nil {
		progress("2/7 graceful handover")
		for _, hc := range handoverCases(o.polls) {
			if ctx.Err() == nil {
				res.handover = append(res.handover, b.handoverLeaderrun(ctx, hc))
			}
		}
		res.handover = append(res.handover, b.handoverEtcd(ctx))
	}

	// The crash trials wait out a lease duration doing nothing: they run
	// during the steady-state window, which measures per-process counts
	// and CPU and is not disturbed by them.
	var wg sync.WaitGroup
	if (o.runs("failover") || o.runs("steady")) && ctx.Err() == nil {
		progress("3/7 crash failover, 4/7 requests and 5/7 footprint (side by side)")
	}
	if o.runs("failover") && ctx.Err() == nil {
		wg.Go(func() { res.failover = b.failover(ctx) })
	}
	if o.runs("steady") && ctx.Err() == nil {
		res.steady = b.steadyState(ctx)
	}
	wg.Wait()

	if o.runs("crowd") {
		for _, n := range o.crowds {
			if ctx.Err() != nil {
				break
			}
			progress(fmt.Sprintf("6/7 %d contenders", n))
			res.crowds = append(res.crowds, b.crowd(ctx, n))
		}
	}
	if o.runs("slots") && ctx.Err() == nil {
		res.slots = b.slotsFigure(ctx)
	}
	if o.runs("previous") && ctx.Err() == nil {
		progress("7/7 this tree against " + o.previous)
		res.previous = b.previous(ctx)
	}
	b.stopAll()
	b.mach.loadAt[1] = loadavg()
	res.wall = time.Since(begin)

	res.check(b)
	report(os.Stdout, b, &res, args)
	switch {
	case len(res.unsafe) > 0:
		return 1, fmt.Errorf("safety check failed: %s", strings.Join(res.unsafe, "; "))
	case ctx.Err() != nil:
		return 2, context.Cause(ctx)
	case len(res.incomplet) > 0:
		return 2, fmt.Errorf("not measured: %s", strings.Join(res.incomplet, "; "))
	}
	return 0, nil
}

// check collects safety failures and unmeasured figures.
func (r *results) check(b *bench) {
	add := func(list *[]string, what, why string) {
		if why != "" {
			*list = append(*list, what+": "+why)
		}
	}
	if r.start != nil {
		add(&r.incomplet, "start cost", r.start.err)
	}
	for _, h := range r.handover {
		if h.etcd && b.etcd == nil {
			continue
		}
		add(&r.incomplet, "handover "+h.label, h.err)
		if h.overlap.D > 0 {
			add(&r.unsafe, "handover "+h.label, h.overlap.String())
		}
	}
	if r.failover != nil {
		add(&r.incomplet, "failover", r.failover.err)
	}
	if r.steady != nil {
		add(&r.incomplet, "requests/footprint", r.steady.err)
	}
	if r.previous != nil {
		add(&r.incomplet, "against "+r.previous.commit, r.previous.err)
	}
	for _, c := range r.crowds {
		add(&r.incomplet, fmt.Sprintf("%d contenders", c.n), c.err)
		if c.overlap.D > 0 {
			add(&r.unsafe, fmt.Sprintf("%d contenders", c.n), c.overlap.String())
		}
	}
	for _, c := range r.slots {
		add(&r.incomplet, fmt.Sprintf("%d contenders on %d slots", c.n, c.slots), c.err)
		if c.overlap.D > 0 || c.mostAtOnce > c.slots {
			add(&r.unsafe, fmt.Sprintf("%d contenders on %d slots", c.n, c.slots), fmt.Sprintf("%d commands at once", c.mostAtOnce))
		}
	}
}

func progress(s string) {
	fmt.Fprintf(os.Stderr, "bench: %s %s\n", time.Now().Format("15:04:05"), s)
}
