package e2e

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// pingLog is a monitor on loopback that records the pings it gets.
type pingLog struct {
	mu    sync.Mutex
	pings []string
}

func (p *pingLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pings = append(p.pings, r.URL.Path)
}

func (p *pingLog) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.pings
	p.pings = nil
	return out
}

// Pings from the host that runs COMMAND: start and success, start and the
// code of a failure; nothing from a skip; a monitor that is down changes no
// exit status, costs one WARNING and never shows the URL's path.
func TestPings(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	container := "pings-" + testenv.RandHex(6)
	mon := &pingLog{}
	srv := httptest.NewServer(mon)
	defer srv.Close()
	run := func(pingURL string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"-l", "job", "--container", container, "--log-level", "trace"}, args...)...)
		cmd.Env = append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+cs, "LEADERRUN_PING_URL="+pingURL)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stderr.String(), "SECRET") {
			t.Errorf("the ping URL's path reached the log:\n%s", stderr.String())
		}
		return code, stderr.String()
	}
	url := srv.URL + "/ping/SECRET-UUID"

	if code, _ := run(url, "--", "true"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if got := mon.take(); strings.Join(got, " ") != "/ping/SECRET-UUID/start /ping/SECRET-UUID" {
		t.Errorf("a success pinged %q", got)
	}
	if code, _ := run(url, "--", "sh", "-c", "exit 3"); code != 3 {
		t.Fatalf("exit %d, want 3", code)
	}
	if got := mon.take(); strings.Join(got, " ") != "/ping/SECRET-UUID/start /ping/SECRET-UUID/3" {
		t.Errorf("a failure pinged %q", got)
	}
	if code, _ := run(url, "--once-per", "1h", "--", "true"); code != 0 {
		t.Fatalf("skip: exit %d", code)
	}
	if got := mon.take(); len(got) != 0 {
		t.Errorf("a skip pinged %q: silence must mean nobody ran", got)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/ping/SECRET-UUID"
	ln.Close()
	code, stderr := run(down, "--", "sh", "-c", "exit 4")
	if code != 4 {
		t.Errorf("with the monitor down: exit %d, want COMMAND's 4", code)
	}
	if n := strings.Count(stderr, "[WARN]"); n != 1 {
		t.Errorf("%d WARNING lines with the monitor down, want 1:\n%s", n, stderr)
	}
}

// The textfile: leaderrun_running is 1 while COMMAND runs (COMMAND reads
// the file), and a failed run leaves the last success where it was.
func TestMetricsFile(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	container := "metrics-" + testenv.RandHex(6)
	path := filepath.Join(t.TempDir(), "leaderrun_job.prom")
	run := func(args ...string) int {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"-l", "job", "--container", container}, args...)...)
		cmd.Env = append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+cs, "LEADERRUN_METRICS_FILE="+path)
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	gauges := func() map[string]float64 {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := p.TextToMetricFamilies(f)
		if err != nil {
			t.Fatalf("Prometheus cannot parse the textfile: %v", err)
		}
		out := map[string]float64{}
		for name, mf := range fams {
			for _, m := range mf.GetMetric() {
				out[name] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	// The start is written beside the run: COMMAND gives it a few seconds.
	running := `for i in $(seq 100); do grep -q '^leaderrun_running{lease="job"} 1$' "$LEADERRUN_METRICS_FILE" && exit 0; sleep 0.05; done; exit 1`
	if code := run("--", "sh", "-c", running); code != 0 {
		t.Fatalf("COMMAND did not find leaderrun_running 1 in the textfile (exit %d)", code)
	}
	g := gauges()
	success := g["leaderrun_last_success_timestamp_seconds"]
	if g["leaderrun_running"] != 0 || success == 0 || g["leaderrun_last_run_exit_code"] != 0 {
		t.Fatalf("after a success: %v", g)
	}
	if code := run("--", "sh", "-c", "exit 5"); code != 5 {
		t.Fatalf("exit %d, want 5", code)
	}
	g = gauges()
	if g["leaderrun_last_success_timestamp_seconds"] != success || g["leaderrun_last_run_exit_code"] != 5 {
		t.Errorf("after a failure: %v; want the last success kept at %v and exit code 5", g, success)
	}
}

// A monitor that does not answer delays neither the stop nor the release:
// while the final ping hangs, the lease is already free; leaderrun exits
// with COMMAND's status once it has waited for the ping a bounded time.
func TestPingNeverDelaysTheRelease(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	container := "pinghang-" + testenv.RandHex(6)
	final := make(chan struct{}, 1)
	unblock := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/start") {
			return
		}
		select {
		case final <- struct{}{}:
		default:
		}
		<-unblock
	}))
	defer srv.Close()
	defer close(unblock)
	env := append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+cs, "LEADERRUN_PING_URL="+srv.URL+"/ping/x")
	cmd := exec.Command(bin, "-l", "job", "--container", container, "--", "sh", "-c", "exit 2")
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan int, 1)
	go func() {
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		exited <- code
	}()
	<-final // the final ping is in flight, and hangs
	released := false
	for range 100 {
		st := exec.Command(bin, "status", "-l", "job", "--container", container, "-o", "json")
		st.Env = env
		out, err := st.Output()
		if err == nil && strings.Contains(string(out), `"state": "available"`) {
			released = true
			break
		}
		select {
		case code := <-exited:
			t.Fatalf("leaderrun exited (%d) before the lease was seen free", code)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !released {
		t.Fatal("the lease was not released while the final ping hung")
	}
	if code := <-exited; code != 2 {
		t.Errorf("exit %d, want COMMAND's 2", code)
	}
}

// cronitorFake accepts only what Cronitor's telemetry API documents for a
// job: GET, POST or HEAD on /p/KEY/MONITOR, state=run|complete|fail, an
// optional series and message, nothing else. It records what it accepted
// and what it refused.
type cronitorFake struct {
	mu       sync.Mutex
	events   []string // state series
	refusals []string
}

func (f *cronitorFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	refuse := func(why string) {
		f.refusals = append(f.refusals, why)
		http.Error(w, why, http.StatusBadRequest)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodPost && r.Method != http.MethodHead {
		refuse("method " + r.Method)
		return
	}
	if r.URL.Path != "/p/KEY/report" {
		refuse("path " + r.URL.Path)
		return
	}
	q := r.URL.Query()
	for k, v := range q {
		if (k != "state" && k != "series" && k != "message") || len(v) != 1 {
			refuse("parameter " + k)
			return
		}
	}
	switch q.Get("state") {
	case "run", "complete", "fail":
	default:
		refuse("state " + q.Get("state"))
		return
	}
	f.events = append(f.events, q.Get("state")+" "+q.Get("series"))
}

func (f *cronitorFake) take() (events, refusals []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	events, refusals = f.events, f.refusals
	f.events, f.refusals = nil, nil
	return events, refusals
}

// The README's Cronitor recipe, as written there, against a fake that
// speaks only Cronitor's telemetry API: a run, then its complete or fail,
// paired by one series per run.
func TestCronitorRecipe(t *testing.T) {
	cs := connectionString(t)
	bin := leaderrunBinary(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`LEADERRUN_PING_URL_TEMPLATE=(https://cronitor\.link/\S+)`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no Cronitor recipe (LEADERRUN_PING_URL_TEMPLATE=https://cronitor.link/…)")
	}
	fake := &cronitorFake{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	template := strings.NewReplacer("https://cronitor.link", srv.URL, "<api-key>", "KEY").Replace(string(m[1]))
	container := "cronitor-" + testenv.RandHex(6)
	var series []string
	for _, tc := range []struct {
		command []string
		code    int
		end     string
	}{{[]string{"true"}, 0, "complete"}, {[]string{"sh", "-c", "exit 3"}, 3, "fail"}} {
		cmd := exec.Command(bin, append([]string{"-l", "report", "--container", container, "--"}, tc.command...)...)
		cmd.Env = append(testenv.BaseEnv(), "AZURE_STORAGE_CONNECTION_STRING="+cs, "LEADERRUN_PING_URL_TEMPLATE="+template)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code {
			t.Fatalf("exit %d, want %d:\n%s", code, tc.code, stderr.String())
		}
		events, refusals := fake.take()
		if len(refusals) > 0 {
			t.Errorf("the fake refused %q", refusals)
		}
		if len(events) != 2 {
			t.Fatalf("events %q, want a run and its %s", events, tc.end)
		}
		s := strings.TrimPrefix(events[0], "run ")
		if s == events[0] || s == "" || events[1] != tc.end+" "+s {
			t.Errorf("events %q, want run then %s, with one series", events, tc.end)
		}
		series = append(series, s)
	}
	if series[0] == series[1] {
		t.Errorf("two runs share the series %s", series[0])
	}
}
