package cmd

// Help and man pages from one model of each command (Doc): its synopsis, a
// short description, examples, its flags in groups, its exit statuses and
// the environment it reads. --help renders the model as text within 80
// columns (helptext.go); scripts/man renders it as man pages.

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The flag groups, in the order help shows them. A subcommand's own flags
// are its Options; the root has none outside a named group.
const (
	groupOptions    = "Options"
	groupCommand    = "Command"
	groupLease      = "Lease"
	groupWaiting    = "Waiting"
	groupOnce       = "Once and schedules"
	groupStopping   = "Stopping"
	groupHealth     = "Health"
	groupMonitoring = "Monitoring"
	groupStorage    = "Storage"
	groupLogging    = "Logging"
	groupOther      = "Other"
)

var groupOrder = []string{groupOptions, groupCommand, groupLease, groupWaiting, groupOnce, groupStopping,
	groupHealth, groupMonitoring, groupStorage, groupLogging, groupOther}

// groupAnnotation is the flag annotation that names a flag's group.
const groupAnnotation = "leaderrun_group"

// inGroup defines flags in group: every flag that define adds to fs (and
// that no inner inGroup already placed) belongs to it. Adding a flag to a
// group is one line inside its inGroup.
func inGroup(fs *pflag.FlagSet, group string, define func(fs *pflag.FlagSet)) {
	g := pflag.NewFlagSet(group, pflag.ContinueOnError)
	g.SortFlags = false
	define(g)
	g.VisitAll(func(f *pflag.Flag) {
		if groupOf(f) == "" {
			_ = g.SetAnnotation(f.Name, groupAnnotation, []string{group})
		}
		fs.AddFlag(f)
	})
}

func groupOf(f *pflag.Flag) string {
	if g := f.Annotations[groupAnnotation]; len(g) == 1 {
		return g[0]
	}
	return ""
}

// flagEnv is every environment variable that sets a flag, in any command
// that has the flag. envDefaults applies it; help and the man pages list
// it. A new variable is one line here.
var flagEnv = map[string]string{
	"lease":                "LEADERRUN_LEASE",
	"container":            "LEADERRUN_CONTAINER",
	"account":              "AZURE_STORAGE_ACCOUNT",
	"endpoint":             "LEADERRUN_ENDPOINT",
	"identity":             "LEADERRUN_IDENTITY",
	"lease-duration":       "LEADERRUN_LEASE_DURATION",
	"deputy-poll-interval": "LEADERRUN_DEPUTY_POLL_INTERVAL",
	"ready-cmd":            "LEADERRUN_READY_CMD",
	"ping-url":             "LEADERRUN_PING_URL",
	"ping-url-template":    "LEADERRUN_PING_URL_TEMPLATE",
	"metrics-file":         "LEADERRUN_METRICS_FILE",
	"max-runtime":          "LEADERRUN_MAX_RUNTIME",
	"keep-output":          "LEADERRUN_KEEP_OUTPUT",
	"schedule":             "LEADERRUN_SCHEDULE",
	"scheduled-events":     "LEADERRUN_SCHEDULED_EVENTS",
	"log-level":            "LEADERRUN_LOG_LEVEL",
}

// Entry is one row of a two-column list: a name and what it means.
type Entry struct{ Name, Text string }

// Flag is one flag as help shows it.
type Flag struct {
	Short, Long string // "l", "lease"
	Arg         string // the value's name ("NAME", "DURATION"); "" for a switch
	Usage       string // one line, wrapped by the renderer
	Default     string // "" when the default goes without saying (off, empty, 0)
	Env         string // the variable that sets it, if any
}

// Names is how the flag is written: "-l, --lease NAME" or "    --once"
// (indented to align with those that have a letter).
func (f Flag) Names() string {
	s := "    --" + f.Long
	if f.Short != "" {
		s = "-" + f.Short + ", --" + f.Long
	}
	if f.Arg != "" {
		s += " " + f.Arg
	}
	return s
}

// Text is the flag's usage with its default and its variable.
func (f Flag) Text() string {
	s := f.Usage
	var extra []string
	if f.Default != "" {
		extra = append(extra, "default "+f.Default)
	}
	if f.Env != "" && !strings.Contains(s, f.Env) {
		extra = append(extra, "env "+f.Env)
	}
	switch {
	case len(extra) == 0:
	case strings.HasSuffix(s, ")"): // one parenthesis: "(±20% jitter; default 2s)"
		s = strings.TrimSuffix(s, ")") + "; " + strings.Join(extra, "; ") + ")"
	default:
		s += " (" + strings.Join(extra, "; ") + ")"
	}
	return s
}

// Group is a titled group of flags.
type Group struct {
	Title string
	Flags []Flag
}

// Doc is what one command's help and man page say.
type Doc struct {
	Path        string   // "leaderrun", "leaderrun status"
	Short       string   // one line: the man page's NAME
	Synopsis    []string // the usage lines; none for a help topic
	Description string   // paragraphs between blank lines; an indented line is kept as it is
	Examples    string   // verbatim lines, indented by two spaces
	Commands    []Entry  // the root's subcommands
	Topics      []Entry  // the root's help topics
	Groups      []Group
	ExitStatus  []Entry
	Environment []Entry  // what the command reads
	CommandEnv  []Entry  // what COMMAND gets (the root)
	SeeAlso     []string // pages: "leaderrun-status(1)"
}

// ManName is the name of the command's man page: "leaderrun-status".
func (d Doc) ManName() string { return strings.ReplaceAll(d.Path, " ", "-") }

// synopsisAnnotation holds a command's usage lines after the first (its Use).
const synopsisAnnotation = "leaderrun_synopsis"

// Docs is the model of every command under root, the root first (help
// topics and the completion scripts' commands have none).
func Docs(root *cobra.Command) []Doc {
	var docs []Doc
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.IsAdditionalHelpTopicCommand() || (c.Parent() != nil && c.Parent().Name() == "completion") {
			return
		}
		docs = append(docs, DocOf(c))
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return docs
}

// DocOf is c's model.
func DocOf(c *cobra.Command) Doc {
	d := Doc{Path: c.CommandPath(), Short: c.Short, Description: strings.TrimSpace(c.Long), Examples: foldExamples(strings.TrimRight(c.Example, "\n "))}
	if d.Description == "" {
		d.Description = c.Short
	}
	topic := c.IsAdditionalHelpTopicCommand()
	if !topic {
		d.Synopsis = append([]string{c.UseLine()}, lines(c.Annotations[synopsisAnnotation])...)
		d.Groups = flagGroups(c)
		d.ExitStatus = exitStatusOf(c)
		d.Environment = environmentOf(c)
		if c == c.Root() {
			d.CommandEnv = commandEnv
		}
	}
	root := c.Root()
	for _, sub := range root.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		if c == root {
			e := Entry{sub.Name(), sub.Short}
			if sub.IsAdditionalHelpTopicCommand() {
				d.Topics = append(d.Topics, e)
			} else {
				d.Commands = append(d.Commands, e)
			}
		}
		if sub != c && (c == root || sub.Name() != "completion") {
			d.SeeAlso = append(d.SeeAlso, Doc{Path: sub.CommandPath()}.ManName()+"(1)")
		}
	}
	if c != root {
		d.SeeAlso = append([]string{root.Name() + "(1)"}, d.SeeAlso...)
	}
	return d
}

// foldExamples breaks an example line wider than help's 80 columns at a
// space, continuing it with a backslash as a shell reads it.
func foldExamples(s string) string {
	var out []string
	for _, line := range lines(s) {
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))] + "    "
		for len([]rune(line)) > helpWidth {
			cut := strings.LastIndex(string([]rune(line)[:helpWidth-2]), " ")
			if cut <= len(indent) {
				break
			}
			out = append(out, line[:cut]+" \\")
			line = indent + strings.TrimLeft(line[cut:], " ")
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// flagGroups are c's flags, its own and those it inherits, in groups.
func flagGroups(c *cobra.Command) []Group {
	c.InitDefaultHelpFlag()
	byGroup := map[string][]Flag{}
	seen := map[string]bool{}
	add := func(f *pflag.Flag) {
		if f.Hidden || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		g := groupOf(f)
		switch {
		case f.Name == "help" || f.Name == "version":
			g = groupOther
		case g == "":
			g = groupOptions
		}
		byGroup[g] = append(byGroup[g], flagOf(f))
	}
	local := c.LocalFlags()
	local.SortFlags = false
	local.VisitAll(add)
	inherited := c.InheritedFlags()
	inherited.SortFlags = false
	inherited.VisitAll(add)
	var groups []Group
	for _, title := range groupOrder {
		if fl := byGroup[title]; len(fl) > 0 {
			groups = append(groups, Group{Title: title, Flags: fl})
		}
	}
	return groups
}

// flagArg names the values of flags whose usage does not (schedule.go).
var flagArg = map[string]string{"schedule": "SPEC"}

// flagOf reads a pflag flag: the value's name from a back-quoted word of
// its usage (pflag's convention: "the `NAME` of the lease"), else from its
// type.
func flagOf(f *pflag.Flag) Flag {
	arg, usage := pflag.UnquoteUsage(f)
	if a, ok := flagArg[f.Name]; ok {
		arg = a
	}
	switch arg {
	case "duration", "string", "int", "stringArray", "stringSlice":
		arg = map[string]string{"duration": "DURATION", "string": "TEXT", "int": "N", "stringArray": "TEXT", "stringSlice": "TEXT"}[arg]
	}
	if f.NoOptDefVal != "" {
		arg = "" // a switch (bool): --once, not --once[=false]
	}
	fl := Flag{Short: f.Shorthand, Long: f.Name, Arg: arg, Usage: usage, Env: flagEnv[f.Name]}
	switch f.DefValue {
	case "", "0", "0s", "false", "[]", "<nil>", "-1": // -1: "not given" (--slot)
	default:
		fl.Default = f.DefValue
	}
	return fl
}

// Exit statuses. The root's are the run's; the operator's commands share
// theirs; check and doctor have their own.
var (
	runExitStatus = []Entry{
		{"COMMAND's", "COMMAND exited by itself: its own status"},
		{"128+N", "signal N ended COMMAND, and leaderrun did not send it because of leadership (a forwarded SIGTERM: 143); or signal N ended the wait. leaderrun then ends by the same signal, so a shell sees 128+N and systemd a clean stop. A COMMAND killed after --kill-grace: 137"},
		{"0", "skipped: a run started within the --once-per window, --once or --once-per-host found the run done, or --schedule found nothing due (or an earlier run still holding the lease, or a retry not due yet)"},
		{"64", "usage or configuration error: a bad flag or duration, a missing lease name, an invalid container name"},
		{"69", "storage unreachable, unauthorized or refused before COMMAND started (or throttled past --storage-timeout)"},
		{"75", "not acquired (-E sets this status): the lease is held by someone else, paused, or a scheduled event concerns this VM (--no-wait, --timeout; with --schedule, a pause or an event is never quiet)"},
		{"76", "leadership was lost while COMMAND ran, or it stepped down for a scheduled event; COMMAND was stopped"},
		{"77", "the health check failed; COMMAND was stopped and the lease released"},
		{"124", "--max-runtime was reached; COMMAND was stopped (as timeout(1) exits)"},
		{"126", "COMMAND found but not executable"},
		{"127", "COMMAND not found"},
	}
	operatorExitStatus = []Entry{
		{"0", "done (nothing to do is done too)"},
		{"64", "usage error: a bad flag, a missing lease name"},
		{"69", "the storage cannot be read or written: unreachable, unauthorized or refused"},
	}
	logsExitStatus = []Entry{
		{"0", "done: the run's output printed"},
		{"1", "that run kept no output (as kubectl logs and grep exit when there is nothing to show)"},
		{"64", "usage error: a bad flag, a missing lease name"},
		{"69", "the storage cannot be read: unreachable, unauthorized or refused"},
	}
	triggerExitStatus = []Entry{
		{"0", "triggered (or a trigger was already pending); with --wait, the triggered run exited 0"},
		{"run's", "with --wait: the triggered run's own status"},
		{"64", "usage error, or nothing would run a trigger: the lease's line is not a --schedule, --once-per or --once line of one slot (or the lease was never used)"},
		{"69", "the storage cannot be read or written: unreachable, unauthorized or refused"},
		{"75", "with --wait -w: no host took the trigger in time; it stays pending"},
		{"76", "with --wait: the triggered run's holder lost the lease or died before it recorded its end"},
	}
	plainExitStatus = []Entry{{"0", "done"}, {"64", "usage error"}}
	checkExitStatus = []Entry{
		{"0", "OK: the last run that succeeded ended within --max-age, and no run after it failed"},
		{"1", "WARNING: it did, but a later run failed"},
		{"2", "CRITICAL: no run ended with status 0 within --max-age, or ever"},
		{"3", "UNKNOWN: the storage cannot be read, or a usage error"},
	}
	doctorExitStatus = []Entry{
		{"0", "every check is ok"},
		{"1", "warnings"},
		{"2", "something a run needs is refused"},
		{"3", "usage error"},
	}
)

func exitStatusOf(c *cobra.Command) []Entry {
	switch {
	case c == c.Root():
		return runExitStatus
	case c.Name() == "check":
		return checkExitStatus
	case c.Name() == "doctor":
		return doctorExitStatus
	case c.Name() == "logs":
		return logsExitStatus
	case c.Name() == "trigger":
		return triggerExitStatus
	case c.Flags().Lookup("container") != nil:
		return operatorExitStatus
	}
	return plainExitStatus
}

// The variables leaderrun reads that set no flag, and those COMMAND gets.
var (
	credentialEnv = []Entry{
		{"AZURE_STORAGE_CONNECTION_STRING", "the storage account's connection string; the first credential tried. Credentials come from the environment only, never from flags, which show in ps"},
		{"AZURE_STORAGE_KEY", "the account key, with AZURE_STORAGE_ACCOUNT (or --account); tried second"},
		{"AZURE_STORAGE_SAS_TOKEN", "a SAS token, with the account or --endpoint; tried third"},
		{"AZURE_CLIENT_ID, AZURE_TENANT_ID, …", "otherwise Microsoft Entra ID, through DefaultAzureCredential: managed identity (AZURE_CLIENT_ID picks a user-assigned one), workload identity, a service principal, the Azure CLI's login"},
	}
	runEnv = []Entry{
		{"LEADERRUN_IMDS_ENDPOINT", "with --scheduled-events: the metadata service's address (default http://169.254.169.254)"},
		{"NOTIFY_SOCKET", "set by systemd (Type=notify): leaderrun reports its state (STATUS=)"},
		{"WATCHDOG_USEC", "set by systemd (WatchdogSec=): leaderrun pings the watchdog while renewals succeed"},
	}
	commandEnv = []Entry{
		{"LEADERRUN_LEASE", "the lease name"},
		{"LEADERRUN_LEASE_URL", "the blob's URL, without any SAS or credential"},
		{"LEADERRUN_LEASE_ID", "the lease ID held"},
		{"LEADERRUN_TERM", "the fencing token: 1 at a blob's first acquisition, growing at every acquisition across all holders"},
		{"LEADERRUN_IDENTITY", "this holder's identity"},
		{"LEADERRUN_SLOT", "the slot held, 0 to N-1 under --slots N (0 with one slot)"},
		{"LEADERRUN_OCCURRENCE", "with --schedule: the occurrence this run is for; for a run of leaderrun trigger, the trigger's time (RFC 3339, UTC)"},
		{"LEADERRUN_TRIGGER", "why it runs: schedule (an occurrence's first attempt), retry (--retries) or manual (leaderrun trigger); absent otherwise"},
		{"LEADERRUN_ATTEMPT", "with LEADERRUN_TRIGGER: the attempt at the occurrence, 1 to --retries + 1 (1 for a manual run)"},
		{"LEADERRUN_PREVIOUS_OCCURRENCE", "with --schedule: the schedule's occurrence before LEADERRUN_OCCURRENCE (RFC 3339, UTC)"},
		{"LEADERRUN_MISSED", "with --schedule, but for a manual run: how many occurrences were due since the previous one started and never started"},
		{"LEADERRUN_LAST_SUCCESS", "when the last run that exited 0 ended (RFC 3339, UTC); absent if unknown"},
	}
)

// environmentOf is what c reads from the environment: the variables of its
// flags, the credentials when it uses storage, and for the root the
// metadata service's address and what systemd sets.
func environmentOf(c *cobra.Command) []Entry {
	var env []Entry
	for _, g := range flagGroups(c) {
		for _, f := range g.Flags {
			if f.Env != "" {
				env = append(env, Entry{f.Env, "sets --" + f.Long})
			}
		}
	}
	slices.SortFunc(env, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	if c.Flags().Lookup("container") != nil {
		env = append(env, credentialEnv...)
	}
	if c == c.Root() {
		env = append(env, runEnv...)
	}
	return env
}
