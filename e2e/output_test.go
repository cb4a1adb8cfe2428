package e2e

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaderrun/leaderrun/internal/testkit/faultproxy"
	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// logTime reads the time of the first line of leaderrun's log (text
// format) that contains what.
func logTime(t *testing.T, log, what string) time.Time {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, what) {
			ts, _, _ := strings.Cut(line, " ")
			at, err := time.Parse("2006-01-02T15:04:05.000Z07:00", ts)
			if err != nil {
				t.Fatalf("no time on %q: %v", line, err)
			}
			return at
		}
	}
	t.Fatalf("no line with %q in:\n%s", what, log)
	return time.Time{}
}

// Keeping the output never delays the release by more than 2 s, however
// its upload goes: a hanging upload, or one throttled (503 ServerBusy) or
// timed out (500 OperationTimedOut) again and again (the fault proxy aimed
// at the output's blob alone). The run's exit status is
// COMMAND's, after one WARNING; the lease is free for the next run.
func TestOutputUploadNeverHoldsTheLease(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	proxy, pcs := faultproxy.Start(t, cs)
	container := "outhang-" + testenv.RandHex(6)
	run := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"-l", "job", "--container", container, "--log-level", "debug"}, args...)...)
		cmd.Env = append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+pcs)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stderr.String()
	}
	for _, m := range []faultproxy.Mode{
		{Only: "~output/", BlackHole: true},
		{Only: "~output/", ErrorRate: 1, ErrorStatus: 503},
		{Only: "~output/", ErrorRate: 1, ErrorStatus: 500, ErrorCode: "OperationTimedOut"},
	} {
		proxy.Set(m)
		code, log := run("--", "sh", "-c", "echo a line to keep; exit 3")
		if code != 3 {
			t.Fatalf("%+v: exit %d, want COMMAND's 3:\n%s", m, code, log)
		}
		ended, released := logTime(t, log, "command exited"), logTime(t, log, "released lease")
		if d := released.Sub(ended); d > 2500*time.Millisecond {
			t.Errorf("%+v: the release came %s after COMMAND's end, want 2s at most (and a margin)", m, d)
		}
		if !strings.Contains(log, "could not keep the command's output") {
			t.Errorf("%+v: no line says the output was not kept:\n%s", m, log)
		}
		if n := strings.Count(log, "[WARN]"); n != 1 {
			t.Errorf("%+v: %d WARNING lines, want 1:\n%s", m, n, log)
		}
	}
	proxy.Set(faultproxy.Mode{})
	if code, log := run("--", "sh", "-c", "echo kept"); code != 0 || strings.Contains(log, "[WARN]") {
		t.Fatalf("without faults: exit %d:\n%s", code, log)
	}
}

// The end ping's body is the run's summary, then its kept output.
func TestPingBodyCarriesTheOutput(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	container := "outping-" + testenv.RandHex(6)
	var mu sync.Mutex
	bodies := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies[r.URL.Path] = string(b)
		mu.Unlock()
	}))
	defer srv.Close()
	cmd := exec.Command(bin, "-l", "job", "--container", container, "-q", "--", "sh", "-c", "echo from stdout; echo from stderr >&2; exit 2")
	cmd.Env = append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+cs, "LEADERRUN_PING_URL="+srv.URL+"/ping/x")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out // one pipe: kept in the order written
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v\n%s", err, out.String())
	}
	if out.String() != "from stdout\nfrom stderr\n" {
		t.Errorf("COMMAND's output as it reached leaderrun's caller: %q", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	body := bodies["/ping/x/2"]
	summary, output, _ := strings.Cut(body, "\n")
	if !strings.Contains(summary, "exit=2") || output != "from stdout\nfrom stderr\n" {
		t.Errorf("the end ping's body: %q, want the summary, then the output", body)
	}
}
