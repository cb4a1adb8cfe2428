package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/chaos"
	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// crowdResult is figure 6 for one number of contenders.
type crowdResult struct {
	n          int
	slots      int // --slots (1: one lease blob)
	mostAtOnce int // the most commands running at one instant (must not exceed slots)
	poll, run  time.Duration
	started    int
	pssTotal   int64 // kB, every contender waiting
	rssTotal   int64
	watch      time.Duration     // the window with all n waiting behind a holder
	waiting    faultproxy.Counts // requests during that window
	peakWait   int64             // most requests in one second of it
	passAround time.Duration     // from the holder's release to the last child's end
	during     faultproxy.Counts // requests while leadership passed around
	peakRun    int64
	ran        int           // contenders whose child ran
	gaps       sample        // one child's end to the next one's begin
	overlap    chaos.Overlap // must be zero
	err        string
}

// crowd starts n contenders on one lease while a holder keeps it: every
// contender waits, polling at o.crowdPoll, and the storage's request rate is
// measured over o.crowdWatch. Then the holder ends and leadership passes
// around: each contender's child (the chaos child under timeout(1), so
// that it ends by itself after o.crowdRun) runs once, and each leaderrun
// exits after its run. Every request goes through one counting proxy.
func (b *bench) crowd(ctx context.Context, n int) crowdResult { return b.crowdOn(ctx, n, 1) }

// crowdOn is crowd on a lease of the given number of slots: as many
// holders keep every slot while the contenders wait.
//
// It is one long function on purpose: the figure is a script of steps in
// order (proxy, holders, contenders, the waiting window, the drain) that
// share a dozen values; split, they would pass them all around.
func (b *bench) crowdOn(ctx context.Context, n, slots int) crowdResult {
	r := crowdResult{n: n, slots: slots, poll: b.o.crowdPoll, run: b.o.crowdRun, watch: b.o.crowdWatch}
	// Its own directory, records included: figure 8 runs a crowd of the
	// same size and slots as figure 6, and would count both runs' children.
	dir := filepath.Join(b.work, fmt.Sprintf("crowd-%d-%d-%s", n, slots, testenv.RandHex(3)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.err = err.Error()
		return r
	}
	timeoutBin, err := exec.LookPath("timeout")
	if err != nil {
		r.err = "timeout(1) not found"
		return r
	}
	recPath := filepath.Join(dir, "records")
	rec := chaos.NewRecords(recPath)
	name := fmt.Sprintf("crowd%d-%s", n, testenv.RandHex(4))
	p, err := faultproxy.New(b.az.Target)
	if err != nil {
		r.err = err.Error()
		return r
	}
	defer p.Close()
	env, flags := b.viaProxy(p)
	slotFlags := []string{"--slots", fmt.Sprint(slots)}
	flags = append(flags, slotFlags...)
	// Every contender gives up after this (exit 75): the run is bounded
	// even if leadership stopped passing around.
	giveUp := time.Duration(n)*(b.o.crowdRun+time.Second) + 2*time.Minute

	var procs []*testenv.Process
	defer func() {
		for _, q := range procs {
			q.Stop(5 * time.Second)
		}
		b.reapChildren(rec)
	}()

	// The holders (one per slot) talk to the emulator directly: the proxy
	// sees the contenders only.
	var holders []*testenv.Process
	for i := range slots {
		id := fmt.Sprintf("holder%d", i)
		holder, err := b.launch("crowd-"+id, filepath.Join(dir, id+".log"), b.direct(),
			b.lr(name, append([]string{"--identity", id}, slotFlags...), "sleep", "600"))
		if err != nil {
			r.err = err.Error()
			return r
		}
		procs = append(procs, holder)
		holders = append(holders, holder)
		if !waitFor(ctx, 20*time.Second, func() bool { return testenv.LogHas(holder.Log, "acquired lease") || holder.Exited() }) || holder.Exited() {
			if ctx.Err() != nil {
				r.err = "interrupted"
				return r
			}
			r.err = "the holder did not acquire the lease" + testenv.LogTail(holder.Log)
			return r
		}
	}

	// Start the contenders spread over one poll interval, so that their
	// polls are spread too (started at once, they would poll in step for
	// a while).
	spread := max(b.o.crowdPoll/time.Duration(n), 5*time.Millisecond)
	for i := range n {
		if ctx.Err() != nil {
			r.err = "interrupted"
			return r
		}
		id := fmt.Sprintf("c%03d", i)
		cf := append(slices.Clone(flags), "--identity", id, "--poll-interval", b.o.crowdPoll.String(), "-w", giveUp.String())
		q, err := b.launch(id, filepath.Join(dir, id+".log"), env,
			b.lr(name, cf, timeoutBin, "--foreground", "-s", "TERM", durSeconds(b.o.crowdRun), b.bin.child, "-log", recPath))
		if err != nil {
			r.err = err.Error()
			return r
		}
		procs = append(procs, q)
		r.started++
		time.Sleep(spread)
	}
	contenders := procs[slots:]
	// Every 200 ms, look at the logs of those not yet seen waiting.
	pending := slices.Clone(contenders)
	settled := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; {
		pending = slices.DeleteFunc(pending, func(q *testenv.Process) bool { return q.Exited() || testenv.LogHas(q.Log, "waiting for the lease") })
		if settled = len(pending) == 0; settled {
			break
		}
		testenv.SleepCtx(ctx, 200*time.Millisecond)
	}
	if !settled {
		r.err = "not every contender settled into waiting within 60 s"
		return r
	}
	for _, q := range contenders {
		if q.Exited() {
			r.err = fmt.Sprintf("%s exited while the holder held the lease (status %d)%s", q.Name, q.ExitCode(), testenv.LogTail(q.Log))
			return r
		}
		s := readProcStat(q.Pid(), b.tick)
		r.pssTotal += s.PSS
		r.rssTotal += s.RSS
	}

	// The request rate with every contender waiting.
	p.ResetCounts()
	r.peakWait = peakRate(ctx, p, r.watch)
	r.waiting = p.Counts()
	if ctx.Err() != nil {
		r.err = "interrupted"
		return r
	}

	// Leadership passes around.
	p.ResetCounts()
	var peak int64
	var mu sync.Mutex
	stopPeak := make(chan struct{})
	peakDone := make(chan struct{})
	go func() {
		defer close(peakDone)
		prev := int64(0)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopPeak:
				return
			case <-t.C:
				c := p.Counts()
				mu.Lock()
				peak = max(peak, c.Reads+c.Writes-prev)
				mu.Unlock()
				prev = c.Reads + c.Writes
			}
		}
	}()
	tRelease := time.Now()
	for _, h := range holders {
		h.Signal(syscall.SIGTERM)
	}
	done := waitFor(ctx, giveUp+30*time.Second, func() bool { // exited() reads a channel: cheap
		for _, q := range contenders {
			if !q.Exited() {
				return false
			}
		}
		return true
	})
	close(stopPeak)
	<-peakDone
	r.during = p.Counts()
	mu.Lock()
	r.peakRun = peak
	mu.Unlock()
	if err := rec.Poll(); err != nil {
		r.err = err.Error()
		return r
	}
	procsRec := rec.Procs()
	var children []chaos.Proc
	for _, c := range procsRec {
		if c.Role == "child" {
			children = append(children, c)
		}
	}
	slices.SortFunc(children, func(a, b chaos.Proc) int { return a.Begin.Compare(b.Begin) })
	r.ran = len(children)
	r.gaps, r.mostAtOnce = slotGaps(children, slots)
	if slots == 1 {
		r.overlap = chaos.MaxOverlap(procsRec)
	}
	if len(children) > 0 {
		r.passAround = children[len(children)-1].End.Sub(tRelease)
	}
	if !done {
		r.err = fmt.Sprintf("only %d of %d contenders ran before the bound", r.ran, n)
	}
	return r
}

// peakRate sleeps d (or until ctx ends), sampling p's counts every second,
// and returns the most requests seen in one second.
func peakRate(ctx context.Context, p *faultproxy.Proxy, d time.Duration) int64 {
	var peak, prev int64
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if !testenv.SleepCtx(ctx, min(time.Second, time.Until(end))) {
			break
		}
		c := p.Counts()
		peak = max(peak, c.Reads+c.Writes-prev)
		prev = c.Reads + c.Writes
	}
	return peak
}

// durSeconds formats d for timeout(1): "0.2".
func durSeconds(d time.Duration) string {
	return fmt.Sprintf("%g", d.Seconds())
}
