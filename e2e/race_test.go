package e2e

// The --no-wait race as cron runs it: several hosts' leaderrun started at
// the same instant on one lease, against the emulator. One runs; the others
// say nothing with -E 0 -q, and never name a wrong holder otherwise.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// contender is one leaderrun of a race, and what it left.
type contender struct {
	identity string
	cmd      *exec.Cmd
	stderr   bytes.Buffer
	code     int
}

// race starts one leaderrun per identity with args, all blocked on a shared
// pipe (a shell reads it before exec'ing leaderrun), then closes the pipe's
// write end, which releases them together, and waits for them. COMMAND
// appends its identity to runs.
func race(t *testing.T, bin, runs string, identities []string, args ...string) []*contender {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	child := fmt.Sprintf(`echo "$LEADERRUN_IDENTITY" >> %q; sleep 1.5`, runs)
	var cs []*contender
	for _, id := range identities {
		c := &contender{identity: id}
		argv := append([]string{"-c", `read -r _; exec "$@"`, "sh", bin, "--identity", id}, args...)
		argv = append(argv, "--", "sh", "-c", child)
		c.cmd = exec.Command("sh", argv...)
		c.cmd.Stdin = r
		c.cmd.Stderr = &c.stderr
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	r.Close()
	w.Close() // the barrier: every contender's read ends now
	for _, c := range cs {
		err := c.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			c.code = ee.ExitCode()
		default:
			t.Fatalf("%s: %v", c.identity, err)
		}
	}
	return cs
}

// ranBy reads who ran, one identity per line, and empties the file.
func ranBy(t *testing.T, runs string) []string {
	t.Helper()
	b, err := os.ReadFile(runs)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	_ = os.Remove(runs)
	return strings.Fields(string(b))
}

// slowed puts a proxy in front of the emulator that delays every request
// by latency, as a network with that round trip would, and returns the
// connection string that goes through it.
func slowed(t *testing.T, cs string, latency time.Duration) string {
	t.Helper()
	p, pcs := faultproxy.Start(t, cs)
	p.Set(faultproxy.Mode{Latency: latency})
	return pcs
}

var heldBy = regexp.MustCompile(`is held by (\S+)`)

func TestNoWaitRace(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", cs)
	t.Setenv("LEADERRUN_CONTAINER", "race-"+testenv.RandHex(6))
	runs := filepath.Join(t.TempDir(), "runs")
	ids := []string{"vm-1", "vm-2", "vm-3"}
	const rounds = 3
	direct := cs
	// On loopback a new holder's claim follows its acquire within a few
	// milliseconds, and few losers read the blob in between; over a real
	// network the window is a few round trips wide. A proxy that adds a
	// round trip's latency to every request widens it the same way, so
	// that most losers read the lease held with the metadata of the term
	// before.
	slow := slowed(t, cs, 100*time.Millisecond)

	t.Run("quiet", func(t *testing.T) { raceQuiet(t, bin, runs, ids, rounds, direct, slow) })
	t.Run("text", func(t *testing.T) { raceText(t, bin, runs, ids, rounds, slow) })
}

// raceQuiet races the README's cron recipe, directly and slowed: exactly
// one runs; the others exit 0 and print nothing, whether they lost the
// acquire or found the run.
func raceQuiet(t *testing.T, bin, runs string, ids []string, rounds int, direct, slow string) {
	for i := range 2 * rounds {
		t.Setenv("AZURE_STORAGE_CONNECTION_STRING", direct)
		if i >= rounds {
			t.Setenv("AZURE_STORAGE_CONNECTION_STRING", slow)
		}
		lease := fmt.Sprintf("race/quiet-%d", i)
		got := race(t, bin, runs, ids, "-l", lease, "--no-wait", "-E", "0", "--once-per", "50s", "-q")
		if ran := ranBy(t, runs); len(ran) != 1 {
			t.Errorf("%s: ran by %v, want exactly one", lease, ran)
		}
		for _, c := range got {
			if c.code != 0 || c.stderr.Len() != 0 {
				t.Errorf("%s: %s exited %d with stderr %q, want 0 and nothing", lease, c.identity, c.code, c.stderr.String())
			}
		}
	}
}

// raceText races rounds on one lease, so that every race is against the
// previous winner's metadata: the losers' one line says who holds the
// lease only if it knows.
func raceText(t *testing.T, bin, runs string, ids []string, rounds int, slow string) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", slow)
	// A run before the first round: every round races a previous
	// holder's metadata.
	if out, err := exec.Command(bin, "-l", "race/text", "--identity", "vm-0", "-q", "--", "true").CombinedOutput(); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	stale := 0
	for i := range rounds {
		got := race(t, bin, runs, ids, "-l", "race/text", "--no-wait", "-E", "75")
		ran := ranBy(t, runs)
		if len(ran) != 1 {
			t.Fatalf("round %d: ran by %v, want exactly one", i, ran)
		}
		winner := ran[0]
		for _, c := range got {
			if c.identity == winner {
				if c.code != 0 {
					t.Errorf("round %d: the winner %s exited %d: %s", i, winner, c.code, c.stderr.String())
				}
				continue
			}
			line := strings.TrimSpace(c.stderr.String())
			if c.code != 75 || strings.Count(line, "\n") != 0 || !strings.Contains(line, "[ERROR]") {
				t.Errorf("round %d: %s exited %d with %q, want 75 and one error line", i, c.identity, c.code, line)
				continue
			}
			m := heldBy.FindStringSubmatch(line)
			switch {
			case m == nil:
				t.Errorf("round %d: %s: %q does not say the lease is held", i, c.identity, line)
			case strings.Contains(line, "not known yet"):
				stale++
			case m[1] != winner:
				t.Errorf("round %d: %s says %q, but %s held the lease", i, c.identity, line, winner)
			}
		}
	}
	t.Logf("%d of %d losers read the metadata of the term before and said the holder is not known yet", stale, (len(ids)-1)*rounds)
}
