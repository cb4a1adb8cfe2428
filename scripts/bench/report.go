package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/lease"
)

// hoursPerMonth is Azure's billing month (730 hours).
const hoursPerMonth = 730

// perBlobTarget is Azure's documented target request rate for a single
// blob ("Scalability and performance targets for Blob storage": up to 500
// requests per second).
const perBlobTarget = 500.0

// category is how Azure bills an operation on a standard general-purpose
// v2 account ("Map each REST operation to a price"): Lease Blob (every
// action), Get Blob Properties and Set Blob Metadata are "all other
// operations"; Put Blob is a write; Create Container is "list and create
// container".
func category(op string) string {
	switch op {
	case faultproxy.OpCreateBlob:
		return "write"
	case faultproxy.OpCreateContainer:
		return "list"
	}
	return "other"
}

func (p prices) of(cat string) float64 {
	switch cat {
	case "write":
		return p.write
	case "read":
		return p.read
	case "list":
		return p.list
	}
	return p.other
}

// monthly is the cost of c, counted over window, for a month.
func (p prices) monthly(c faultproxy.Counts, window time.Duration) float64 {
	var usd float64
	for op, n := range c.ByOp {
		usd += float64(n) * p.of(category(op)) / 10000
	}
	return usd * (float64(time.Hour) / float64(window)) * hoursPerMonth
}

func (p prices) perRun(c faultproxy.Counts) float64 {
	var usd float64
	for op, n := range c.ByOp {
		usd += float64(n) * p.of(category(op)) / 10000
	}
	return usd
}

func report(w io.Writer, b *bench, r *results, args []string) {
	pf := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	m := b.mach
	cmdline := "scripts/bench.sh"
	if len(args) > 0 {
		cmdline += " " + strings.Join(args, " ")
	}
	kind := "full run"
	if b.o.quick {
		kind = "quick run (smoke: few rounds, short windows)"
	}
	pf("## Performance\n\n")
	pf("`%s` — %s, %s, wall %s.\n\n", cmdline, kind, time.Now().UTC().Format("2006-01-02"), r.wall.Round(time.Second))
	pf("Machine: %d CPUs (%s), %s, Linux %s, %s; load average %s at the start, %s at the end. ",
		m.cpus, m.cpuModel, m.memory, m.kernel, m.goVer, m.loadAt[0], m.loadAt[1])
	pf("Storage: Azurite %s (blob service, in memory, loopback, plain HTTP). ", b.azVersion)
	if b.etcd != nil {
		pf("Peers: %s (one member on loopback, data on disk) with etcdctl lock; %s.\n\n", b.etcd.version, m.flockVer)
	} else {
		pf("Peers: %s; etcd n/a (%s).\n\n", m.flockVer, b.etcdWhy)
	}
	if b.o.leaderrun != "" {
		pf("leaderrun binary: `%s` (given with -leaderrun), not built from the tree.\n\n", b.o.leaderrun)
	}
	pf("Times are for this machine only, a shared and noisy one: compare the ratios, measured in the same run with the tools interleaved. p50 / p95 are the median and the 95th percentile.\n\n")

	o := b.o
	if o.runs("start") {
		reportStart(pf, b, r.start)
	}
	if o.runs("handover") {
		reportHandover(pf, b, r)
	}
	if o.runs("failover") {
		reportFailover(pf, b, r.failover)
	}
	if o.runs("steady") {
		reportRequests(pf, b, r)
		reportFootprint(pf, b, r)
	}
	if o.runs("crowd") {
		reportCrowds(pf, b, r)
	}
	if o.runs("previous") {
		reportPrevious(pf, r.previous)
	}
	if o.runs("slots") {
		reportSlots(pf, b, r) // slots.go
	}
	reportTargets(pf, b, r)
	if o.only == nil {
		reportMeaning(pf, b, r)
	}
	if len(r.incomplet) > 0 || len(r.unsafe) > 0 {
		pf("### Not measured or failed\n\n")
		for _, s := range r.unsafe {
			pf("- **SAFETY**: %s\n", s)
		}
		for _, s := range r.incomplet {
			pf("- %s\n", s)
		}
		pf("\n")
	}
}

type printer func(format string, a ...any)

func reportStart(pf printer, b *bench, s *startResult) {
	pf("### 1. Start cost: `true` under a free lock\n\n")
	if s == nil || (s.err != "" && len(s.leaderrun) == 0) {
		pf("Not measured: %s\n\n", errOr(s))
		return
	}
	lr := s.leaderrun.p50()
	pf("%d rounds, each command once per round in a random order.\n\n", len(s.leaderrun))
	pf("| command | p50 | p95 | leaderrun ÷ this |\n|---|---|---|---|\n")
	pf("| `flock FILE true` | %s | %s | %s |\n", fd(s.flock.p50()), fd(s.flock.p95()), ratio(lr, s.flock.p50()))
	if len(s.etcd) > 0 {
		pf("| `etcdctl lock x true` (etcd on loopback) | %s | %s | %s |\n", fd(s.etcd.p50()), fd(s.etcd.p95()), ratio(lr, s.etcd.p50()))
	} else {
		pf("| `etcdctl lock x true` | n/a | n/a | n/a (%s) |\n", s.etcdErr)
	}
	pf("| `leaderrun -l x -- true` (Azurite on loopback) | %s | %s | 1.00× |\n\n", fd(lr), fd(s.leaderrun.p95()))

	pf("Where leaderrun's time goes (p50 of each part, measured on its own in the same rounds):\n\n")
	pf("| part | p50 | what it is |\n|---|---|---|\n")
	pf("| `true` alone | %s | fork + exec + exit of the command itself |\n", fd(s.truth.p50()))
	inits := ""
	if s.inits > 0 {
		inits = fmt.Sprintf(" (%d packages initialised, %s of init functions by GODEBUG=inittrace=1)", s.inits, fd(s.initClock.p50()))
	}
	pf("| `leaderrun version` | %s | one start of the leaderrun binary (%s): Go runtime, package initialisation%s, cobra. A run pays it twice, but the guard's start (the same binary) overlaps the acquire |\n",
		fd(s.version.p50()), fmbBytes(b.bin.leaderrun), inits)
	if len(s.guard) > 0 {
		pf("| the guard's go-ahead → status | %s | what the guard adds once the lease is held: it has started during the acquire and waits; it gets the environment, starts `true` as the leader of its process group, and reports its status |\n", fd(s.guard.p50()))
	} else {
		pf("| the guard's go-ahead → status | n/a | %s |\n", s.guardErr)
	}
	n := s.requests.Reads + s.requests.Writes
	pf("| storage requests per run | %d | %s (%d HTTP reads, %d writes); the first GetProperties goes alongside the Acquire, so a run waits for %d round trips |\n",
		n, opsLine(s.requests), s.requests.Reads, s.requests.Writes, max(n-1, 0))
	pf("| one request | %s | Get Blob Properties in-process on a warm connection (loopback, plain HTTP: no TLS) |\n", fd(s.request.p50()))
	for _, tool := range []string{"leaderrun", "etcdctl"} {
		if runs := s.serverRuns[tool]; runs > 0 {
			what := "Azurite (Node.js) serving one `leaderrun -- true`: the emulator's own cost, which a real storage account does not put on this machine"
			if tool == "etcdctl" {
				what = "etcd serving one `etcdctl lock x true`, for comparison"
			}
			pf("| server CPU per run | %s | %s (utime + stime over %d runs) |\n", fd(s.serverCPU[tool]/time.Duration(runs)), what, runs)
		}
	}
	sum := s.version.p50() + s.guard.p50() + time.Duration(max(n-1, 0))*s.request.p50()
	pf("| start + go-ahead + %d round trips | %s | the sum of the parts, against %s measured: the rest is building the storage client, the first connection, and the emulator's work, which competes with leaderrun for the CPUs |\n", max(n-1, 0), fd(sum), fd(lr))
	if len(s.withRTT) > 0 {
		pf("| the run with +%s per request | %s | a proxy delays every request by %s (an in-region round trip): +%s, ≈ %.1f × %s |\n",
			fd(b.o.rtt), fd(s.withRTT.p50()), fd(b.o.rtt), fd(s.withRTT.p50()-lr), float64(s.withRTT.p50()-lr)/float64(b.o.rtt), fd(b.o.rtt))
	} else if s.rttErr != "" {
		pf("| the run with +%s per request | n/a | %s |\n", fd(b.o.rtt), s.rttErr)
	}
	pf("\n")
	if len(s.failures) > 0 {
		var names []string
		for k, v := range s.failures {
			names = append(names, k+": "+v)
		}
		sort.Strings(names)
		pf("Failed runs (left out): %s.\n\n", strings.Join(names, "; "))
	}
}

func reportHandover(pf printer, b *bench, r *results) {
	pf("### 2. Graceful handover: SIGTERM to the leader → the successor's command starts\n\n")
	req := time.Duration(0)
	if r.start != nil {
		req = r.start.request.p50()
	}
	pf("The leader forwards SIGTERM to its command, which ends; the leader records the run's end and releases the lease; the successor's next read finds it free, it acquires, records its run and starts its command. At the default flags the successor is the deputy, the waiting follower that holds the deputy's place and reads the lease every %s; without a deputy it is a follower at its --poll-interval. The SIGTERM falls at a random phase of the successor's polling (±20%% jitter), so the poll wait is random, about poll/2 at the median: with a few dozen handovers the median of the whole is only known to ± poll/(2√n).", lease.DefaultDeputyPoll)
	pf(" Each leaderrun talks through its own counting proxy, whose clock splits the handover into the leader's stop (SIGTERM → its release request), the poll wait (→ the successor's read that finds the lease free) and the take-over (→ the successor's command starts); the stop and the take-over are what leaderrun adds to the wait. etcdctl's process group gets SIGTERM (etcdctl 3.4 does not pass it on to its command) and the waiting etcdctl learns of the unlock by a watch.\n\n")
	if b.o.hoRTT > 0 {
		req += b.o.hoRTT
		pf("Every leaderrun request of this figure is delayed by %s (-handover-rtt), as a network round trip would.\n\n", fd(b.o.hoRTT))
	}
	pf("| | runs | p50 | p95 | floor: poll/2 + 1 request | leader's stop p50 | poll wait p50 | take-over p50 / p95 | stop + take-over p50 (target ≤ 20 ms) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, h := range r.handover {
		if len(h.d) == 0 {
			pf("| %s | 0 | n/a | n/a | | | | | %s |\n", h.label, h.err)
			continue
		}
		if h.etcd {
			pf("| %s | %d | %s | %s | — | — | — | — | — |\n", h.label, len(h.d), fd(h.d.p50()), fd(h.d.p95()))
			continue
		}
		label := h.label
		if h.deputy {
			label = fmt.Sprintf("**%s**", label)
		}
		added := addedPart(h)
		pf("| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", label, len(h.d), fd(h.d.p50()), fd(h.d.p95()), fd(h.poll/2+req),
			fd(h.stop.p50()), fd(h.wait.p50()), fq(h.takeover), verdict(added, 20*time.Millisecond))
	}
	pf("\n")
}

// addedPart is the stop plus the take-over of each handover: what
// leaderrun adds to the poll wait.
func addedPart(h handoverResult) sample {
	var s sample
	for i := range min(len(h.stop), len(h.takeover)) {
		s = append(s, h.stop[i]+h.takeover[i])
	}
	return s
}

func verdict(s sample, limit time.Duration) string {
	if len(s) == 0 {
		return "n/a"
	}
	if s.p50() <= limit {
		return fd(s.p50()) + ", met"
	}
	return fd(s.p50()) + ", **missed**"
}

func reportFailover(pf printer, b *bench, f *failoverResult) {
	pf("### 3. Crash failover: kill -9 of the leader → the successor's command starts\n\n")
	if f == nil {
		pf("Not measured.\n\n")
		return
	}
	pf("Trials side by side, each on its own lease, the kill at a random phase of the 5 s renewals. \"From the last renewal\" is from the last acquire or renew the leader's proxy saw.\n\n")
	pf("| | trials | failover p50 / p95 | from the last renewal p50 / p95 | the crashed leader's command lived on |\n|---|---|---|---|---|\n")
	var errs []string
	for _, row := range f.rows {
		if row.trials > 0 {
			pf("| %s | %d | %s | %s | %s p50, %s max (watched every 1 ms) |\n",
				row.label, row.trials, fq(row.failover), fq(row.sinceRenewal), fd(row.survival.p50()), fd(row.survival.max()))
		} else {
			pf("| %s | 0 | n/a | n/a | %s |\n", row.label, strings.Join(row.errs, "; "))
		}
		errs = append(errs, row.errs...)
	}
	if f.etcdTrials > 0 {
		pf("| `etcdctl lock --ttl %d` | %d | %s | — | still running when the next holder's command began in %d of %d trials (no parent-death signal; the bench killed it) |\n",
			etcdTTL, f.etcdTrials, fq(f.etcdFailover), f.etcdOrphans, f.etcdTrials)
	} else {
		pf("| `etcdctl lock` | 0 | n/a | — | %s |\n", f.etcdErr)
	}
	pf("\n")
	if len(errs) > 0 {
		pf("Trials that could not run: %s.\n\n", strings.Join(errs, "; "))
	}
}

func reportRequests(pf printer, b *bench, r *results) {
	s := r.steady
	pf("### 4. Storage requests per hour, and what they cost\n\n")
	if s == nil || len(s.rows) == 0 {
		pf("Not measured: %s\n\n", errOrSteady(s))
		return
	}
	scale := float64(time.Hour) / float64(s.window)
	p := b.o.prices
	pf("Counted by a proxy per process over a %s window, ×%.0f. Azure bills Lease Blob (acquire, renew, release, break), Get Blob Properties and Set Blob Metadata as **\"all other operations\"** on a standard general-purpose v2 account, not as reads or writes; only creating the blob is a write (\"Map each REST operation to a price\"). Prices assumed: USD %g (write), %g (read), %g (all other), %g (list and create container) per 10,000 operations — Microsoft's sample hot-tier prices in \"Estimate the cost of using Azure Blob Storage\", not a quote; pass `-price-*` for your region's. A month is %d hours.\n\n",
		s.window, scale, p.write, p.read, p.other, p.list, hoursPerMonth)
	pf("| process | requests/h | HTTP reads/h | HTTP writes/h | by operation (per hour) | $/month |\n|---|---|---|---|---|---|\n")
	for _, row := range s.rows {
		if row.counts == nil {
			continue
		}
		c := *row.counts
		pf("| %s | %s | %s | %s | %s | %s |\n", row.label, fcount(float64(c.Reads+c.Writes)*scale), fcount(float64(c.Reads)*scale),
			fcount(float64(c.Writes)*scale), opsPerHour(c, scale), usd(p.monthly(c, s.window)))
	}
	pf("\n")
	if r.start != nil && r.start.requests.Reads+r.start.requests.Writes > 0 {
		c := r.start.requests
		pf("One run on a free lease (figure 1) makes %d requests (%s): %s per 10,000 runs. ", c.Reads+c.Writes, opsLine(c), usd(p.perRun(c)*10000))
	}
	for i, row := range s.rows {
		switch {
		case row.startup == nil || i == 0:
		case strings.Contains(row.label, "the deputy ("):
			pf("Before the window, the deputy's start (the lease's acquire refused and its read; the place's read, creation, acquire and the record of who holds it) and its first polls: %s. ", opsLine(*row.startup))
		case strings.Contains(row.label, "another follower"):
			pf("Another follower's start: %s. ", opsLine(*row.startup))
		}
	}
	pf("A follower that is not the deputy reads the lease every poll and the deputy's place every 15 s (and once after each handover): 240 of its GetProperties an hour are the place's (the lease package's TestDeputyCost counts them apart).\n\n")
}

func reportFootprint(pf printer, b *bench, r *results) {
	s := r.steady
	pf("### 5. Footprint over the same window\n\n")
	if s == nil || len(s.rows) == 0 {
		pf("Not measured: %s\n\n", errOrSteady(s))
		return
	}
	pf("Peak RSS is VmHWM (since the process started); PSS divides the pages that several processes map (leaderrun and its guard map the same binary) among them; CPU is the time the process's threads spent on a CPU during the %s window (/proc/PID/task/*/schedstat).\n\n", s.window)
	pf("| process | peak RSS | RSS | PSS | CPU in the window | share of one core |\n|---|---|---|---|---|---|\n")
	for _, row := range s.rows {
		if row.err != "" {
			pf("| %s | n/a | | | | %s |\n", row.label, row.err)
			continue
		}
		share := float64(row.cpu) / float64(s.window) * 100
		pf("| %s | %s | %s | %s | %s | %.3f%% |\n", row.label, fmb(row.stat.HWM), fmb(row.stat.RSS), fmb(row.stat.PSS), fd(row.cpu), share)
	}
	z := r.sizes
	pf("\nBinary size: leaderrun %s, %s with `-ldflags \"-s -w\"`", mbBytes(z.plain), mbBytes(z.stripped))
	if z.etcdctl > 0 {
		pf("; etcdctl %s", mbBytes(z.etcdctl))
	}
	if z.flock > 0 {
		pf("; flock %s", kbBytes(z.flock))
	}
	pf(".\n\n")
}

func reportCrowds(pf printer, b *bench, r *results) {
	pf("### 6. Many contenders on one lease\n\n")
	if len(r.crowds) == 0 {
		pf("Not measured.\n\n")
		return
	}
	pf("N leaderrun processes at `--poll-interval %s` wait behind a holder (request rate over %s), then the holder ends and leadership passes around: each contender runs a %s command once and exits. All requests go through one counting proxy; the chaos child's records show whether two commands ever ran at once.\n\n",
		b.o.crowdPoll, b.o.crowdWatch, b.o.crowdRun)
	pf("| contenders | all waiting: requests/s (peak in 1 s) | per contender | PSS / RSS of all | commands run | two at once | end → next begin p50 / p95 | passing around: requests/s (peak) | acquires per handover | writes per waiting contender-hour (but the deputy's place) |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.crowds {
		if c.started == 0 {
			pf("| %d | n/a | | | | | | | | %s |\n", c.n, c.err)
			continue
		}
		wr := float64(c.waiting.Reads+c.waiting.Writes) / c.watch.Seconds()
		two := "never"
		if c.overlap.D > 0 {
			two = "**" + fd(c.overlap.D) + "**"
		}
		runRate, acq := "n/a", "n/a"
		if c.passAround > 0 {
			runRate = fmt.Sprintf("%s (%d)", fcount(float64(c.during.Reads+c.during.Writes)/c.passAround.Seconds()), c.peakRun)
		}
		if c.ran > 0 {
			acq = fmt.Sprintf("%.2f", float64(c.during.ByOp[faultproxy.OpAcquire])/float64(c.ran))
		}
		writesPerHour := float64(leaseWrites(c.waiting)) / c.watch.Hours() / float64(c.n)
		pf("| %d | %s (%d) | %s/s | %s / %s | %d of %d | %s | %s | %s | %s | %s |\n", c.n, fcount(wr), c.peakWait,
			fcount(wr/float64(c.n)), fmb(c.pssTotal), fmb(c.rssTotal), c.ran, c.n, two, fq(c.gaps), runRate, acq, fcount(writesPerHour))
	}
	pf("\n")
	// The model for 1,000.
	var perContender float64
	var writes int64
	for _, c := range r.crowds {
		if c.started > 0 && c.watch > 0 {
			perContender = float64(c.waiting.Reads+c.waiting.Writes) / c.watch.Seconds() / float64(c.n)
			writes += leaseWrites(c.waiting)
		}
	}
	wrote := "writes nothing"
	if writes > 0 {
		wrote = fmt.Sprintf("wrote %d times (all contenders together)", writes)
	}
	if perContender > 0 {
		poll := b.o.crowdPoll
		k := perContender * poll.Seconds() // requests per contender per poll interval, ≈ 1
		at := func(n int, p time.Duration) float64 { return float64(n) * k / p.Seconds() }
		floor := time.Duration(1000 * k / perBlobTarget * float64(time.Second))
		half := 2 * floor
		pf("**A model for 1,000 contenders.** Measured above: a waiting contender makes %.2f requests per poll interval (%.3f requests/s at %s): a read of the lease each poll, one of the deputy's place every 15 s, and the deputy's 4 reads a second shared among them; and %s while the lease is held. N contenders at poll interval P thus make ≈ N/P requests/s on the lease blob (plus the deputy's 4) and N/15 on the place's, the holder's renewal every 5 s and a few acquires at each handover. Azure's target for a single blob is up to %.0f requests/s (\"Scalability and performance targets for Blob storage\"); beyond it the service answers 503 Server Busy to every client of the blob, the holder's renewals included. For 1,000 contenders: at the default 2 s that is ≈ %.0f requests/s, %s the target; `--poll-interval %s` reaches the target, `--poll-interval %s` keeps them at half of it (≈ %.0f requests/s, %s a month at the sample price). More contenders make handovers faster, not slower: after a release the first read comes within about P/N (%s for 1,000 at %s).\n\n",
			k, perContender, poll, wrote, perBlobTarget, at(1000, 2*time.Second), aboveBelow(at(1000, 2*time.Second)), roundUp(floor), roundUp(half), at(1000, roundUp(half)),
			usd(at(1000, roundUp(half))*3600*hoursPerMonth*b.o.prices.other/10000), fd(roundUp(half)/1000), roundUp(half))
	}
}

func reportTargets(pf printer, b *bench, r *results) {
	pf("### Targets\n\n| target | measured | |\n|---|---|---|\n")
	row := func(target, measured string, ok bool) {
		v := "met"
		if !ok {
			v = "**missed**"
		}
		pf("| %s | %s | %s |\n", target, measured, v)
	}
	if s := r.start; s != nil && len(s.leaderrun) > 0 && len(s.etcd) > 0 {
		measured := fmt.Sprintf("%s vs %s (%s)", fd(s.leaderrun.p50()), fd(s.etcd.p50()), ratio(s.leaderrun.p50(), s.etcd.p50()))
		if s.serverRuns["leaderrun"] > 0 && s.serverRuns["etcdctl"] > 0 {
			measured += fmt.Sprintf("; the server's CPU per run: Azurite %s, etcd %s", fd(s.serverCPU["leaderrun"]/time.Duration(s.serverRuns["leaderrun"])),
				fd(s.serverCPU["etcdctl"]/time.Duration(s.serverRuns["etcdctl"])))
		}
		row("`leaderrun -- true` ≤ ½ × `etcdctl lock`", measured, s.leaderrun.p50()*2 <= s.etcd.p50())
	}
	if s := r.steady; s != nil {
		var w int64
		var seen bool
		for _, row := range s.rows {
			if row.counts != nil && strings.HasPrefix(row.label, "leaderrun, waiting") {
				w += leaseWrites(*row.counts)
				seen = true
			}
		}
		for _, c := range r.crowds {
			w += leaseWrites(c.waiting)
		}
		if seen {
			row("waiting followers make no writes while the lease is held (but the deputy's renewals of its own place)", fmt.Sprintf("%d writes", w), w == 0)
		}
		for _, rw := range s.rows {
			if strings.HasPrefix(rw.label, "leaderrun, leading") && rw.err == "" {
				row("peak RSS of a leading leaderrun ≤ 20 MB", fmb(rw.stat.HWM), rw.stat.HWM <= 20*1024)
			}
		}
	}
	for _, h := range r.handover {
		if h.deputy && len(h.d) > 0 {
			row("graceful handover at the default flags (to the deputy): p50 ≤ 250 ms, p95 ≤ 400 ms",
				fmt.Sprintf("p50 %s, p95 %s (%d handovers)", fd(h.d.p50()), fd(h.d.p95()), len(h.d)),
				h.d.p50() <= 250*time.Millisecond && h.d.p95() <= 400*time.Millisecond)
		}
	}
	for _, h := range r.handover {
		if added := addedPart(h); !h.etcd && len(added) > 0 {
			row(fmt.Sprintf("handover p50 ≤ poll/2 + 20 ms at %s", h.label),
				fmt.Sprintf("%s; the stop + take-over that leaderrun adds to the poll wait: %s", fd(h.d.p50()), fd(added.p50())),
				added.p50() <= 20*time.Millisecond)
		}
	}
	for _, c := range r.crowds {
		row(fmt.Sprintf("exactly one command at every instant, %d contenders", c.n), fmt.Sprintf("longest overlap %s", fd(c.overlap.D)), c.overlap.D <= 0 && c.started > 0)
	}
	pf("\n")
}

func reportMeaning(pf printer, b *bench, r *results) {
	pf("### What the figures mean for choosing `--deputy-poll-interval`, `--poll-interval` and `--lease-duration`\n\n")
	extra, dep := "a few tens of milliseconds", "n/a"
	for _, h := range r.handover {
		if added := addedPart(h); h.deputy && len(added) > 0 {
			extra, dep = fd(added.p50()), fmt.Sprintf("%s at the median, %s at the 95th percentile", fd(h.d.p50()), fd(h.d.p95()))
		}
	}
	pf("- **The deputy sets how long a planned stop leaves nobody running**: one waiting follower holds the deputy's place and reads the lease every %s, so a graceful handover takes about half of that plus %s here (its next read, then its acquire, the claim and the start of its command): %s (figure 2). It costs that follower 3600/D reads an hour (14,400 at 250 ms) and 720 renewals of its place; every other follower reads the place every 15 s and after each handover, 240 reads an hour. `--deputy-poll-interval 0` turns it off: a handover then takes half a `--poll-interval`, at worst 1.2 of them.\n", lease.DefaultDeputyPoll, extra, dep)
	pf("- **`--poll-interval` sets what a waiting follower costs**: 3600/P reads of the lease an hour (1,800 at the default 2 s) besides the 240 of the deputy's place, one request each, and no writes. Lengthen it for big fleets (keep N/P well under Azure's %.0f requests/s per blob: P ≥ N/250 s).\n", perBlobTarget)
	pf("- **`--lease-duration` sets how long a crash leaves nobody running**: after kill -9, a lost VM or a cut network, the lease runs out by itself: failover ≈ the lease duration − the age of the last renewal + half the deputy's poll (10–15 s at the default 15 s; up to about 60 s at 60 s). A longer lease rides out longer storage outages before the command is stopped (while renewals fail, it keeps running until the lease duration − 1.5 s − the stop budget after the last success, and is dead 1 s before the lease could pass), at the price of a slower failover. It changes the bill little: renewals every duration/3 (720 an hour at 15 s, 180 at 60 s).\n")
	pf("- **The crashed leader's command does not live on**: on Linux it dies with leaderrun within milliseconds (figure 3), where `etcdctl lock`'s command keeps running, unlocked, next to the new holder's.\n")
	pf("- **Start cost matters only in loops**: a run is a few tens of milliseconds on loopback, plus one round trip per request on Azure (figure 1's last row); for cron jobs and services it is noise.\n")
	pf("- **Memory**: a leading leaderrun and its guard share one binary's pages (figure 5's PSS); a waiting follower is one process.\n\n")
}

// leaseWrites are the writes of waiting followers but the deputy's
// renewals of its place: a follower holds no lease but that one, so every
// renewal it sends is the place's, on a blob of its own.
func leaseWrites(c faultproxy.Counts) int64 { return c.Writes - c.ByOp[faultproxy.OpRenew] }

// opsPerHour is opsLine with per-hour counts.
func opsPerHour(c faultproxy.Counts, scale float64) string {
	if len(c.ByOp) == 0 {
		return "none"
	}
	var keys []string
	for k := range c.ByOp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s", k, fcount(float64(c.ByOp[k])*scale)))
	}
	return strings.Join(parts, ", ")
}

func aboveBelow(rate float64) string {
	switch {
	case rate > perBlobTarget*1.02:
		return "above"
	case rate >= perBlobTarget*0.98:
		return "at"
	}
	return "below"
}

// roundUp rounds d up to a whole half second.
func roundUp(d time.Duration) time.Duration {
	const step = 500 * time.Millisecond
	return (d + step - 1) / step * step
}

func errOr(s *startResult) string {
	if s == nil {
		return "not run"
	}
	return s.err
}

func errOrSteady(s *steadyResult) string {
	if s == nil {
		return "not run"
	}
	return s.err
}

func fmbBytes(path string) string {
	z := measureSizes(binaries{leaderrun: path})
	return mbBytes(z.plain)
}

func mbBytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
func kbBytes(n int64) string { return fmt.Sprintf("%.0f kB", float64(n)/1e3) }
