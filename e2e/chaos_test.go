package e2e

// The short version of the chaos run (scripts/chaos.sh runs the long one):
// every fault scenario of internal/testkit/chaos once, with fixed middle-of-the-range
// parameters, against the Azurite emulator that scripts/test.sh starts.

import (
	"context"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/chaos"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

var (
	chaosChildOnce sync.Once
	chaosChildPath string
	chaosChildErr  error
)

// chaosChild builds the chaos child once, next to the leaderrun binary.
func chaosChild(t *testing.T) string {
	t.Helper()
	bin := leaderrunBinary(t)
	chaosChildOnce.Do(func() {
		chaosChildPath = filepath.Join(filepath.Dir(bin), "chaoschild")
		chaosChildErr = testenv.Build(context.Background(), "..", chaos.ChildPackage, chaosChildPath)
	})
	if chaosChildErr != nil {
		t.Fatal(chaosChildErr)
	}
	return chaosChildPath
}

// TestChaos runs each scenario once and checks the safety rule: no overlap
// in scenarios 1–8, 10, 13 and 14 (the freeze included: the guard kills at the deadline),
// leadership kept through short faults, exit 76 where it is lost; for the
// storage loss, only that the child was killed in the end (its window is
// logged). A trial takes 10–25 s, most
// of it waiting for a lease to expire, so all of them run at once: each
// subtest starts its trial before calling t.Parallel, which otherwise
// would let only -parallel (GOMAXPROCS) of them run at a time.
func TestChaos(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the chaos trials need Linux: kill -9 relies on the parent-death signal, leftovers are found in /proc")
	}
	if testing.Short() {
		t.Skip("the chaos trials take about 30 s")
	}
	env, err := chaos.NewEnv(connectionString(t), leaderrunBinary(t), chaosChild(t))
	if err != nil {
		t.Fatal(err)
	}
	type variant struct {
		k     chaos.Kind
		slots int
	}
	var variants []variant
	for _, k := range chaos.Kinds() {
		variants = append(variants, variant{k, 1})
	}
	// On a lease of two slots: at most two groups at every instant, and
	// the follower only after the holder's group.
	variants = append(variants, variant{chaos.BlackHole, 2}, variant{chaos.Kill9, 2})
	for _, v := range variants {
		k, name := v.k, v.k.String()
		if v.slots > 1 {
			name += "-slots" + strconv.Itoa(v.slots)
		}
		t.Run(name, func(t *testing.T) {
			tr := chaos.Trial{Kind: k, Params: k.Typical(), Dir: t.TempDir(), Timeout: 100 * time.Second, Slots: v.slots}
			done := make(chan *chaos.Result, 1)
			go func() { done <- chaos.Run(context.Background(), env, tr) }()
			t.Parallel()
			r := <-done
			t.Logf("%s (%s): %s", k, k.Expect(), r.Line())
			for _, d := range r.Details() {
				t.Log(d)
			}
			if r.Err != nil || r.Failed() {
				for _, name := range []string{"holder.log", "follower.log", "break.log"} {
					logFileTail(t, filepath.Join(tr.Dir, name))
				}
			}
			if r.Err != nil {
				t.Fatalf("the trial could not run: %v", r.Err)
			}
			for _, f := range r.Failures {
				t.Error(f)
			}
		})
	}
}

// logFileTail logs the last lines of a trial's log file, if it exists.
func logFileTail(t *testing.T, path string) {
	t.Helper()
	if lines := testenv.Tail(path, 60); lines != nil {
		t.Logf("%s:\n%s", filepath.Base(path), strings.Join(lines, "\n"))
	}
}
