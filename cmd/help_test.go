package cmd

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/pflag"
)

// helpTexts is every help text: each command's --help and each topic.
func helpTexts(t *testing.T) map[string]string {
	t.Helper()
	texts := map[string]string{}
	for _, d := range Docs(Command()) {
		args := append(strings.Fields(d.Path)[1:], "--help")
		texts[d.Path+" --help"] = helpOf(t, args...)
	}
	for _, topic := range []string{"exit-status", "environment"} {
		texts["help "+topic] = helpOf(t, "help", topic)
	}
	return texts
}

func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	code, out, stderr := run(t, args...)
	if code != 0 || stderr != "" {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
	}
	return out
}

// Help is read in a terminal: every line within 80 columns, Usage first.
func TestHelpWidth(t *testing.T) {
	texts := helpTexts(t)
	if len(texts) < 12 {
		t.Fatalf("only %d help texts", len(texts))
	}
	for name, text := range texts {
		for i, line := range strings.Split(text, "\n") {
			if n := utf8.RuneCountInString(line); n > helpWidth {
				t.Errorf("%s, line %d: %d columns: %q", name, i+1, n, line)
			}
		}
		if strings.HasSuffix(name, "--help") && !strings.HasPrefix(text, "Usage:\n  leaderrun") {
			t.Errorf("%s does not begin with Usage:\n%.200s", name, text)
		}
	}
}

// Every flag of the run is in a named group, and the groups come in their
// order; a flag added outside every inGroup fails here.
func TestRootFlagsGrouped(t *testing.T) {
	root := Command()
	root.Flags().VisitAll(func(f *pflag.Flag) {
		if groupOf(f) == "" && f.Name != "help" && f.Name != "version" {
			t.Errorf("--%s is in no group: define it inside one of the inGroup blocks of runOptions.addFlags", f.Name)
		}
	})
	var titles []string
	for _, g := range DocOf(root).Groups {
		titles = append(titles, g.Title)
	}
	want := []string{groupCommand, groupLease, groupWaiting, groupOnce, groupStopping, groupHealth, groupMonitoring, groupStorage, groupLogging, groupOther}
	if strings.Join(titles, ",") != strings.Join(want, ",") {
		t.Errorf("groups %q, want %q", titles, want)
	}
	help := helpOf(t, "--help")
	for _, s := range []string{"\nLease:\n  -l, --lease NAME ", "\nWaiting:\n  -n, --no-wait ", "(default 10s)", "(default 1m)", "env LEADERRUN_LEASE_DURATION"} {
		if !strings.Contains(help, s) {
			t.Errorf("--help has no %q", s)
		}
	}
	if strings.Contains(help, "[=false]") || strings.Contains(help, `=""`) || strings.Contains(help, "1m0s") {
		t.Errorf("--help shows pflag's raw defaults:\n%s", help)
	}
}

// The topics list every status of leaderrun's own and every variable.
func TestHelpTopics(t *testing.T) {
	exits := helpOf(t, "help", "exit-status")
	for _, s := range []string{"\n  64 ", "\n  69 ", "\n  75 ", "\n  76 ", "\n  77 ", "\n  126 ", "\n  127 ", "\n  128+N ", "leaderrun check:", "leaderrun doctor:"} {
		if !strings.Contains(exits, s) {
			t.Errorf("help exit-status has no %q", s)
		}
	}
	env := helpOf(t, "help", "environment")
	for _, v := range flagEnv {
		if !strings.Contains(env, "\n  "+v+" ") && !strings.Contains(env, "\n  "+v+"\n") {
			t.Errorf("help environment does not list %s", v)
		}
	}
	for _, v := range []string{"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "LEADERRUN_IMDS_ENDPOINT", "LEADERRUN_TERM"} {
		if !strings.Contains(env, v) {
			t.Errorf("help environment does not list %s", v)
		}
	}
}

// Every example (help, man, README, the example crontab) that runs
// leaderrun --no-wait from cron says -E 0: a lease held by an overrunning
// run is no error for cron to mail.
func TestHelpCronExamplesQuiet(t *testing.T) {
	texts := helpTexts(t)
	for _, f := range []string{"../README.md", examples + "report.cron"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	for name, text := range texts {
		for _, line := range strings.Split(text, "\n") {
			if cronLine(line) && (strings.Contains(line, " -n ") || strings.Contains(line, "--no-wait")) && !strings.Contains(line, "-E 0") {
				t.Errorf("%s: a cron line without -E 0: %q", name, line)
			}
		}
	}
}

// cronLine: a crontab entry that runs leaderrun.
func cronLine(line string) bool {
	f := strings.Fields(line)
	return len(f) > 5 && strings.ContainsAny(f[0], "*/0123456789@") && strings.Contains(line, "leaderrun ")
}

func TestWrap(t *testing.T) {
	for _, tt := range []struct {
		in    string
		width int
		want  string
	}{
		{"a b c", 3, "a b\nc"},
		{"averyveryverylongword b", 5, "averyveryverylongword\nb"},
		{"  spaced   out  ", 80, "spaced out"},
		{"", 10, ""},
	} {
		if got := wrap(tt.in, tt.width); got != tt.want {
			t.Errorf("wrap(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
		}
	}
}

// -c STRING becomes sh -c STRING; with -- COMMAND it is a usage error.
func TestShellCommand(t *testing.T) {
	env := map[string]string{"AZURE_STORAGE_ACCOUNT": "mystorageaccount"}
	o, err := lineOptions(t, []string{"-l", "x", "-c", "pg_dump shop | gzip > x.gz"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.run.Argv, "|"); got != "sh|-c|pg_dump shop | gzip > x.gz" {
		t.Fatalf("argv %q", o.run.Argv)
	}
}

// A long value typed on the command line is cut in the one line, never
// echoed whole.
func TestLongValuesCut(t *testing.T) {
	long := strings.Repeat("n", 2000)
	for _, args := range [][]string{
		{"-l", long, "--", "true"},
		{"status", "-l", long},
		{"pause", "-l", long},
		{"--log-format", long, "-l", "x", "--", "true"},
		{long},
	} {
		code, _, stderr := run(t, args...)
		if code != 64 || len(stderr) > 400 || !strings.Contains(stderr, "(2000 characters)") {
			t.Errorf("%.40q: exit %d, %d bytes of stderr:\n%.400s", args, code, len(stderr), stderr)
		}
	}
}
