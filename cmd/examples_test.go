package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.yaml.in/yaml/v3"

	"github.com/leaderrun/leaderrun/leader"
	"github.com/leaderrun/leaderrun/lease"
)

// The files under testdata/examples are what users copy; these tests parse
// them and check every leaderrun command line in them the way leaderrun
// itself would (flags, environment, lease configuration), without running
// anything.

const examples = "../testdata/examples/"

// checkLine validates a leaderrun command line (without the program name)
// and returns its options; env is the environment the example sets.
func checkLine(t *testing.T, args []string, env map[string]string) *runOptions {
	t.Helper()
	o, err := lineOptions(t, args, env)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// lineOptions is checkLine's work, returning what is wrong.
func lineOptions(t *testing.T, args []string, env map[string]string) (*runOptions, error) {
	t.Helper()
	for _, k := range []string{"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
		"AZURE_STORAGE_ACCOUNT", "LEADERRUN_LEASE", "LEADERRUN_CONTAINER", "LEADERRUN_ENDPOINT",
		"LEADERRUN_SCHEDULED_EVENTS", "LEADERRUN_IMDS_ENDPOINT"} {
		t.Setenv(k, "")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var got *runOptions
	validate := func(_ context.Context, a *app, o *runOptions) error {
		client, err := o.loc.client(a.log)
		if err != nil {
			return err
		}
		if _, err := lease.NewElector(client, o.run.Lease); err != nil {
			return leader.StorageExit(err)
		}
		got = o
		return nil
	}
	a := &app{stdout: io.Discard, stderr: io.Discard, log: hclog.NewNullLogger()}
	root := newRootCmdWith(a, validate)
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	if err := root.Execute(); err != nil {
		return nil, fmt.Errorf("leaderrun %s: %w", strings.Join(args, " "), err)
	}
	if got == nil {
		return nil, fmt.Errorf("leaderrun %s: not a run command line", strings.Join(args, " "))
	}
	return got, nil
}

// leaderrunArgs returns the arguments after the leaderrun program in a
// shell-free command line, up to a redirection.
func leaderrunArgs(t *testing.T, line string) []string {
	t.Helper()
	fields := shellWords(line)
	for i, f := range fields {
		if f == "leaderrun" || strings.HasSuffix(f, "/leaderrun") {
			var args []string
			for _, a := range fields[i+1:] {
				if strings.HasPrefix(a, ">") || strings.HasPrefix(a, "2>") || a == "&&" || a == "|" {
					break
				}
				args = append(args, strings.Trim(a, `"']`))
			}
			return args
		}
	}
	t.Fatalf("no leaderrun command in %q", line)
	return nil
}

// shellWords splits line as sh would for the shapes the examples use:
// words, and words quoted whole with ' or ".
func shellWords(line string) []string {
	var words []string
	for rest := strings.TrimSpace(line); rest != ""; rest = strings.TrimSpace(rest) {
		if q := rest[0]; q == '\'' || q == '"' {
			if end := strings.IndexByte(rest[1:], q); end >= 0 {
				words = append(words, rest[1:end+1])
				rest = rest[end+2:]
				continue
			}
		}
		w, r, _ := strings.Cut(rest, " ")
		words, rest = append(words, w), r
	}
	return words
}

// unit is a systemd unit file: section → key → values.
type unit map[string]map[string][]string

func parseUnit(text string) (unit, error) {
	u := unit{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("unit line %d: %q is neither a section nor key=value", n, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u, nil
}

// checkUnit fails t with every problem of a hot-standby unit.
func checkUnit(t *testing.T, text string) {
	t.Helper()
	for _, p := range unitProblems(t, text) {
		t.Error(p)
	}
}

// unitProblems checks a hot-standby unit: the settings the README promises,
// and its ExecStart line.
func unitProblems(t *testing.T, text string) []string {
	t.Helper()
	var problems []string
	u, err := parseUnit(text)
	if err != nil {
		return []string{err.Error()}
	}
	svc := u["Service"]
	if svc == nil || u["Unit"] == nil || u["Install"] == nil {
		return []string{"a unit needs [Unit], [Service] and [Install]"}
	}
	want := map[string]string{"Type": "notify", "Restart": "always", "KillMode": "mixed", "NotifyAccess": "main"}
	for _, k := range []string{"Type", "Restart", "KillMode", "NotifyAccess"} {
		if got := svc[k]; len(got) != 1 || got[0] != want[k] {
			problems = append(problems, fmt.Sprintf("[Service] %s=%v, want %s", k, got, want[k]))
		}
	}
	env := map[string]string{"AZURE_STORAGE_ACCOUNT": "mystorageaccount"} // or from an EnvironmentFile
	for _, kv := range svc["Environment"] {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if len(svc["ExecStart"]) != 1 {
		return append(problems, fmt.Sprintf("ExecStart=%v, want one", svc["ExecStart"]))
	}
	o, err := lineOptions(t, leaderrunArgs(t, svc["ExecStart"][0]), env)
	if err != nil {
		return append(problems, err.Error())
	}
	if !o.scheduledEvents {
		problems = append(problems, "a hot standby on Azure VMs should step down before the platform takes the VM: --scheduled-events")
	}
	stop, err := systemdDuration(svc["TimeoutStopSec"])
	if err != nil || stop <= o.run.Lease.KillGrace {
		problems = append(problems, fmt.Sprintf("TimeoutStopSec %v must exceed --kill-grace %s", svc["TimeoutStopSec"], o.run.Lease.KillGrace))
	}
	renew := o.run.Lease.Duration / 3
	if o.run.Lease.RenewInterval > 0 {
		renew = o.run.Lease.RenewInterval
	}
	if wd, err := systemdDuration(svc["WatchdogSec"]); err != nil || wd <= 2*renew {
		problems = append(problems, fmt.Sprintf("WatchdogSec %v must exceed twice the renew interval %s", svc["WatchdogSec"], renew))
	}
	return problems
}

func systemdDuration(v []string) (time.Duration, error) {
	if len(v) != 1 {
		return 0, fmt.Errorf("want one value, got %v", v)
	}
	return time.ParseDuration(v[0])
}

func TestExampleSystemdUnit(t *testing.T) {
	data, err := os.ReadFile(examples + "scheduler.service")
	if err != nil {
		t.Fatal(err)
	}
	checkUnit(t, string(data))
}

// The systemd timer recipe: report.timer starts report.service every
// minute, and the service's leaderrun line has a --schedule.
func TestExampleSystemdTimer(t *testing.T) {
	timer, err := os.ReadFile(examples + "report.timer")
	if err != nil {
		t.Fatal(err)
	}
	tu, err := parseUnit(string(timer))
	if err != nil {
		t.Fatal(err)
	}
	if got := tu["Timer"]["OnCalendar"]; len(got) != 1 || got[0] != "minutely" {
		t.Errorf("report.timer OnCalendar = %q, want minutely", got)
	}
	svc, err := os.ReadFile(examples + "report.service")
	if err != nil {
		t.Fatal(err)
	}
	su, err := parseUnit(string(svc))
	if err != nil {
		t.Fatal(err)
	}
	if got := su["Service"]["Type"]; len(got) != 1 || got[0] != "oneshot" {
		t.Errorf("report.service Type = %q, want oneshot", got)
	}
	env := map[string]string{}
	for _, e := range su["Service"]["Environment"] {
		if k, v, ok := strings.Cut(e, "="); ok {
			env[k] = v
		}
	}
	exec := su["Service"]["ExecStart"]
	if len(exec) != 1 {
		t.Fatalf("report.service ExecStart = %q", exec)
	}
	if o := checkLine(t, leaderrunArgs(t, exec[0]), env); o.run.Schedule == nil {
		t.Errorf("report.service runs leaderrun without --schedule: %q", exec[0])
	}
}

func TestExampleCrontab(t *testing.T) {
	data, err := os.ReadFile(examples + "report.cron")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	jobs := 0
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && !strings.ContainsAny(k, " \t") {
			env[k] = v
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 7 {
			t.Fatalf("cron.d line needs 5 schedule fields, a user and a command: %q", line)
		}
		if fields[5] != "root" {
			t.Errorf("user field %q", fields[5])
		}
		o := checkLine(t, leaderrunArgs(t, line), env)
		if o.run.Schedule != nil {
			// The scheduled recipe: every VM, every minute.
			if strings.Join(fields[:5], " ") != "* * * * *" {
				t.Errorf("a --schedule line runs every minute: %q", line)
			}
			jobs++
			continue
		}
		period := cronPeriod(t, fields[:5])
		if !o.run.NoWait || o.run.OncePer == 0 {
			t.Errorf("the cron recipe uses --no-wait and --once-per: %q", line)
		}
		if o.run.OncePer >= period {
			t.Errorf("--once-per %s must be shorter than the schedule's period %s: %q", o.run.OncePer, period, line)
		}
		if o.run.ConflictCode != 0 {
			t.Errorf("-E 0: a held lease is not an error under cron: %q", line)
		}
		jobs++
	}
	if jobs == 0 {
		t.Fatal("no job lines")
	}
}

// cronPeriod understands the two shapes the example uses: "*/N * * * *"
// and "M H * * *".
func cronPeriod(t *testing.T, f []string) time.Duration {
	t.Helper()
	if f[2] != "*" || f[3] != "*" || f[4] != "*" {
		t.Fatalf("schedule %v: day, month and weekday must be *", f)
	}
	if n, ok := strings.CutPrefix(f[0], "*/"); ok && f[1] == "*" {
		m, err := strconv.Atoi(n)
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(m) * time.Minute
	}
	if _, err := strconv.Atoi(f[0]); err == nil {
		if _, err := strconv.Atoi(f[1]); err == nil {
			return 24 * time.Hour
		}
	}
	t.Fatalf("schedule %v not understood", f)
	return 0
}

func TestExampleCloudInit(t *testing.T) {
	data, err := os.ReadFile(examples + "cloud-init.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.HasPrefix(text, "#cloud-config\n") {
		t.Fatal("cloud-init user data must start with #cloud-config")
	}
	for _, want := range []string{"Storage Blob Data Contributor", "az role assignment create", "/blobServices/default/containers/leaderrun"} {
		if !strings.Contains(text, want) {
			t.Errorf("the role assignment comment lacks %q", want)
		}
	}
	var cfg struct {
		WriteFiles []struct {
			Path        string `yaml:"path"`
			Content     string `yaml:"content"`
			Permissions string `yaml:"permissions"`
		} `yaml:"write_files"`
		Runcmd []any `yaml:"runcmd"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	env := map[string]string{}
	units := 0
	for _, f := range cfg.WriteFiles {
		switch {
		case strings.HasSuffix(f.Path, ".env"):
			for _, line := range strings.Split(strings.TrimSpace(f.Content), "\n") {
				k, v, _ := strings.Cut(line, "=")
				env[k] = v
			}
			if strings.Contains(f.Content, "AZURE_STORAGE_KEY") || strings.Contains(f.Content, "SAS_TOKEN") {
				t.Errorf("%s: the scale set authenticates with its managed identity, not a secret", f.Path)
			}
		case strings.HasSuffix(f.Path, ".service"):
			checkUnit(t, f.Content)
			units++
		}
	}
	if units == 0 {
		t.Error("no systemd unit in write_files")
	}
	steps, installs := 0, 0
	for _, c := range cfg.Runcmd {
		var line string
		strict := false // sh -e: a failed step stops the rest
		switch c := c.(type) {
		case string:
			line = c
		case []any:
			if len(c) > 0 {
				line, _ = c[len(c)-1].(string)
			}
			strict = len(c) == 3 && c[0] == "sh" && c[1] == "-ec"
		}
		if strings.Contains(line, ".deb") {
			// The release's .deb is installed only once its digest, pinned
			// in release.env, has been checked.
			check, install := strings.Index(line, "sha256sum -c"), strings.Index(line, "apt-get install")
			if check < 0 || install < check || !strings.Contains(line, "LEADERRUN_DEB_SHA256") || !strict {
				t.Errorf("the .deb must be checked against its pinned SHA-256 before apt-get installs it, and stop if it does not match: %q", line)
			}
			installs++
		}
		if !strings.Contains(line, "leaderrun -l") {
			continue
		}
		for _, part := range strings.Split(line, "&&") {
			if strings.Contains(part, "leaderrun -l") {
				o := checkLine(t, leaderrunArgs(t, part), env)
				if strings.HasPrefix(o.loc.lease, "deploy/") && !o.run.Once {
					t.Errorf("a deploy step runs once for the scale set: it needs --once: %q", part)
				}
				steps++
			}
		}
	}
	if steps == 0 {
		t.Error("no leaderrun step in runcmd")
	}
	if installs != 1 || env["LEADERRUN_DEB_URL"] == "" || env["LEADERRUN_DEB_SHA256"] == "" {
		t.Errorf("%d .deb installs, release.env %v: want one install of the release's .deb, its URL and SHA-256 at the top", installs, env)
	}
}

// The checks above must be able to fail: a unit that gets each promise
// wrong is rejected on each count.
func TestExampleChecksReject(t *testing.T) {
	bad := `[Unit]
Description=x
[Service]
Type=simple
ExecStart=/usr/local/bin/leaderrun -l x --kill-grace 60s -- /bin/true
Restart=no
KillMode=control-group
NotifyAccess=main
TimeoutStopSec=30s
WatchdogSec=5s
[Install]
WantedBy=multi-user.target
`
	got := strings.Join(unitProblems(t, bad), "\n")
	for _, want := range []string{"Type=", "Restart=", "KillMode=", "TimeoutStopSec", "WatchdogSec", "--scheduled-events"} {
		if !strings.Contains(got, want) {
			t.Errorf("a wrong %s was not reported; problems:\n%s", want, got)
		}
	}
	if _, err := lineOptions(t, []string{"-l", "x", "--lease-duration", "5s", "--", "true"}, map[string]string{"AZURE_STORAGE_ACCOUNT": "a"}); err == nil {
		t.Error("a 5 s lease was accepted")
	}
	if _, err := lineOptions(t, []string{"-l", "x", "true"}, map[string]string{"AZURE_STORAGE_ACCOUNT": "a"}); err == nil {
		t.Error("a command without -- was accepted")
	}
}

// The rolling-work recipe: two at a time, each host once.
func TestExampleRollingPatch(t *testing.T) {
	data, err := os.ReadFile(examples + "rolling-patch.sh")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	lines := 0
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok && !strings.ContainsAny(k, " \t#") {
			env[k] = v
			continue
		}
		if !strings.HasPrefix(line, "leaderrun ") {
			continue
		}
		o := checkLine(t, leaderrunArgs(t, line), env)
		if o.run.Lease.Slots < 2 || !o.oncePerHost || o.run.NoWait {
			t.Errorf("the rolling recipe waits, with --slots > 1 and --once-per-host: %q", line)
		}
		lines++
	}
	if lines != 1 {
		t.Fatalf("%d leaderrun lines, want 1", lines)
	}
}
