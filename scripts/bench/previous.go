package main

// Figure 7: this tree's binary (storage through the Azure SDK, azblob)
// against the build of an earlier commit (by default the last one whose
// lease package spoke the Blob REST API with its own signer), side by side.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// previousResult is figure 7.
type previousResult struct {
	commit         string
	cur, prev      sample // `leaderrun -l x -- true` on a free lease
	curVer, prvVer sample // `leaderrun version`: one start of the binary
	curSize        int64  // bytes, as built (not stripped)
	prevSize       int64
	err            string
}

// buildPrevious builds leaderrun as it was at commit: the tree from `git
// archive` (the repository is not touched), then go build with this
// machine's toolchain and module cache.
func buildPrevious(ctx context.Context, root, commit, work, out string) error {
	src := filepath.Join(work, "previous-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`,
		"sh", root, commit, src)
	if b, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive %s: %w\n%s", commit, err, b)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build at %s: %w\n%s", commit, err, b)
	}
	return nil
}

func (b *bench) previous(ctx context.Context) *previousResult {
	r := &previousResult{commit: b.o.previous}
	prevBin := filepath.Join(b.work, "bin", "leaderrun-previous")
	if err := buildPrevious(ctx, b.root, b.o.previous, b.work, prevBin); err != nil {
		r.err = err.Error()
		return r
	}
	if st, err := os.Stat(prevBin); err == nil {
		r.prevSize = st.Size()
	}
	if st, err := os.Stat(b.bin.leaderrun); err == nil {
		r.curSize = st.Size()
	}
	out, err := os.OpenFile(filepath.Join(b.work, "previous.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.err = err.Error()
		return r
	}
	defer out.Close()
	run := func(bin, lease string) []string {
		return []string{bin, "-l", lease, "--container", b.container, "-q", "--", "true"}
	}
	name := "previous-" + testenv.RandHex(4)
	type job struct {
		argv []string
		env  []string
		into *sample
	}
	jobs := []job{
		{run(b.bin.leaderrun, name+"-sdk"), b.direct(), &r.cur},
		{run(prevBin, name+"-rest"), b.direct(), &r.prev},
		{[]string{b.bin.leaderrun, "version"}, testenv.BaseEnv(), &r.curVer},
		{[]string{prevBin, "version"}, testenv.BaseEnv(), &r.prvVer},
	}
	// Warm-up: the first runs create the blobs and fill the page cache.
	for range 3 {
		for _, j := range jobs {
			if _, err := timed(j.env, b.work, out, j.argv...); err != nil {
				r.err = fmt.Sprintf("%s: %v%s", j.argv[0], err, testenv.LogTail(out.Name()))
				return r
			}
		}
	}
	// Rounds, each command once per round in a random order.
	for range b.o.previousRuns {
		for _, i := range rand.Perm(len(jobs)) {
			if ctx.Err() != nil {
				r.err = "interrupted"
				return r
			}
			j := jobs[i]
			d, err := timed(j.env, b.work, out, j.argv...)
			if err != nil {
				r.err = fmt.Sprintf("%s: %v", j.argv[0], err)
				continue
			}
			*j.into = append(*j.into, d)
		}
	}
	return r
}

func reportPrevious(pf printer, r *previousResult) {
	pf("### 7. The Azure SDK against the previous REST client\n\n")
	if r == nil || len(r.cur) == 0 || len(r.prev) == 0 {
		msg := "interrupted"
		if r != nil && r.err != "" {
			msg = r.err
		}
		pf("Not measured: %s\n\n", msg)
		return
	}
	pf("This tree's binary (every storage request through azblob v1.8.0) and the build of commit %s "+
		"(the Blob REST API with its own Shared Key signer), %d rounds, each command once per round in a random order, "+
		"`-- true` on a free lease each.\n\n", r.commit, len(r.cur))
	pf("| binary | `-- true` p50 | p95 | `version` p50 | p95 | size |\n|---|---|---|---|---|---|\n")
	pf("| previous (%s, REST) | %s | %s | %s | %s | %s |\n", r.commit, fd(r.prev.p50()), fd(r.prev.p95()),
		fd(r.prvVer.p50()), fd(r.prvVer.p95()), mbBytes(r.prevSize))
	pf("| this tree (azblob v1.8.0) | %s | %s | %s | %s | %s |\n", fd(r.cur.p50()), fd(r.cur.p95()),
		fd(r.curVer.p50()), fd(r.curVer.p95()), mbBytes(r.curSize))
	size := "n/a"
	if r.prevSize > 0 {
		size = fmt.Sprintf("%.2f×", float64(r.curSize)/float64(r.prevSize))
	}
	pf("| this ÷ previous | %s | %s | %s | %s | %s |\n\n", ratio(r.cur.p50(), r.prev.p50()), ratio(r.cur.p95(), r.prev.p95()),
		ratio(r.curVer.p50(), r.prvVer.p50()), ratio(r.curVer.p95(), r.prvVer.p95()), size)
	verdict := "within"
	if float64(r.cur.p50()) > 1.05*float64(r.prev.p50()) {
		verdict = "above"
	}
	pf("The aim is at most 1.05× at p50: %s it.\n\n", verdict)
}
