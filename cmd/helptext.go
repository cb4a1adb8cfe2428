package cmd

// --help as text: a command's Doc (help.go) within 80 columns, Usage first
// as flock(1) and timeout(1) have it; the help topics exit-status and
// environment; and the short usage printed before a usage error.

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/leaderrun/leaderrun/exit"
)

// helpWidth is the widest line of any help text.
const helpWidth = 80

// topicAnnotation marks a help topic command: its text is made from the
// whole tree when it is shown.
const topicAnnotation = "leaderrun_topic"

// setupHelp gives root and its commands their help: the help topics, the
// help and usage functions, and every duration flag's systemd spans.
// It runs once the tree is complete.
func setupHelp(root *cobra.Command) {
	root.AddCommand(
		&cobra.Command{Use: "exit-status", Short: "What each exit status of leaderrun means",
			Annotations: map[string]string{topicAnnotation: "exit-status"}},
		&cobra.Command{Use: "environment", Short: "The environment variables leaderrun reads, and those COMMAND gets",
			Annotations: map[string]string{topicAnnotation: "environment"}},
	)
	setupCompletion(root)
	acceptTimeSpans(root)
	definitionOrder(root)
	root.SetHelpCommand(newHelpCmd())
	root.InitDefaultHelpCmd()
	root.InitDefaultVersionFlag()
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { writeHelp(c.OutOrStdout(), c) })
	root.SetUsageFunc(func(c *cobra.Command) error {
		writeUsage(c.OutOrStderr(), DocOf(c))
		return nil
	})
}

// newHelpCmd is `leaderrun help [SUBCOMMAND | TOPIC]`; an unknown name is
// a usage error, with a suggestion when one is close.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [SUBCOMMAND | TOPIC]",
		Short: "Help about a subcommand or a topic",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var names []string
			for _, sub := range c.Root().Commands() {
				if !sub.Hidden && sub.Name() != "help" && strings.HasPrefix(sub.Name(), toComplete) && len(args) == 0 {
					names = append(names, sub.Name()+"\t"+sub.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 || (target == root && len(args) > 0) {
				if s := append(root.SuggestionsFor(args[0]), topicsLike(root, args[0])...); len(s) > 0 {
					return exit.Usagef("no help for %s; did you mean %q?", exit.Quote(strings.Join(args, " ")), s[0])
				}
				return exit.Usagef("no help for %s: 'leaderrun --help' lists the subcommands and topics", exit.Quote(strings.Join(args, " ")))
			}
			target.InitDefaultHelpFlag()
			return target.Help()
		},
	}
}

// topicsLike are the help topics that begin as word does (cobra suggests
// commands only).
func topicsLike(root *cobra.Command, word string) []string {
	var like []string
	for _, c := range root.Commands() {
		n := c.Name()
		common := 0
		for common < min(len(n), len(word)) && n[common] == word[common] {
			common++
		}
		if c.IsAdditionalHelpTopicCommand() && common >= 4 {
			like = append(like, n)
		}
	}
	return like
}

// definitionOrder makes help list flags in the order they are defined,
// which is the order of their groups' lines.
func definitionOrder(c *cobra.Command) {
	c.Flags().SortFlags = false
	c.PersistentFlags().SortFlags = false
	for _, sub := range c.Commands() {
		definitionOrder(sub)
	}
}

// setupCompletion makes `completion SHELL` refuse a shell it does not know
// (64, naming those it knows) instead of printing its help.
func setupCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, sh := range c.Commands() {
			shells = append(shells, sh.Name())
		}
		known := strings.Join(shells[:len(shells)-1], ", ") + " or " + shells[len(shells)-1]
		c.Example = `  # bash, this shell only (the packages install every shell's script)
  source <(leaderrun completion bash)

  # zsh, for every new shell
  leaderrun completion zsh > "${fpath[1]}/_leaderrun"`
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return exit.Usagef("missing shell: leaderrun completion SHELL, where SHELL is %s", known)
			}
			return exit.Usagef("unknown shell %s: leaderrun completes %s", exit.Quote(args[0]), known)
		}
	}
}

// writeHelp prints c's help; a help topic prints its text.
func writeHelp(w io.Writer, c *cobra.Command) {
	switch c.Annotations[topicAnnotation] {
	case "exit-status":
		writeExitStatusTopic(w, c.Root())
		return
	case "environment":
		writeEnvironmentTopic(w, c.Root())
		return
	}
	d := DocOf(c)
	writeUsage(w, d)
	fmt.Fprintln(w)
	fmt.Fprintln(w, d.Description)
	if d.Examples != "" {
		fmt.Fprintln(w, "\nExamples:")
		fmt.Fprintln(w, d.Examples)
	}
	if len(d.Commands) > 0 {
		fmt.Fprintln(w, "\nSubcommands (leaderrun help SUBCOMMAND for each):")
		writeEntries(w, d.Commands)
	}
	if len(d.Topics) > 0 {
		fmt.Fprintln(w, "\nHelp topics (leaderrun help TOPIC):")
		writeEntries(w, d.Topics)
	}
	// One column for the usage of every group's flags.
	rows := make([][]Entry, len(d.Groups))
	for i, g := range d.Groups {
		for _, f := range g.Flags {
			rows[i] = append(rows[i], Entry{f.Names(), f.Text()})
		}
	}
	col := entryColumn(slices.Concat(rows...))
	for i, g := range d.Groups {
		fmt.Fprintf(w, "\n%s:\n", g.Title)
		writeEntriesAt(w, rows[i], col)
	}
	fmt.Fprintf(w, "\nExit status, environment and more: man %s\n", d.ManName())
}

// writeUsage prints the synopsis.
func writeUsage(w io.Writer, d Doc) {
	fmt.Fprintln(w, "Usage:")
	for _, s := range d.Synopsis {
		fmt.Fprintln(w, "  "+s)
	}
}

func writeExitStatusTopic(w io.Writer, root *cobra.Command) {
	fmt.Fprintln(w, wrap("Exit status of a run (leaderrun -l NAME [flags] -- COMMAND). Every non-zero status of leaderrun's own comes after one log line on stderr that says why.", helpWidth))
	fmt.Fprintln(w)
	writeEntries(w, runExitStatus)
	// The subcommands, those with the same statuses together.
	var tables [][]Entry
	names := map[int][]string{}
	for _, d := range Docs(root)[1:] {
		i := slices.IndexFunc(tables, func(t []Entry) bool { return slices.Equal(t, d.ExitStatus) })
		if i < 0 {
			tables = append(tables, d.ExitStatus)
			i = len(tables) - 1
		}
		names[i] = append(names[i], strings.TrimPrefix(d.Path, root.Name()+" "))
	}
	for i, t := range tables {
		fmt.Fprintln(w)
		fmt.Fprintln(w, wrap("leaderrun "+strings.Join(names[i], ", ")+":", helpWidth))
		writeEntries(w, t)
	}
}

func writeEnvironmentTopic(w io.Writer, root *cobra.Command) {
	fmt.Fprintln(w, wrap("leaderrun reads these variables; a flag on the command line wins over its variable. An empty variable counts as unset.", helpWidth))
	fmt.Fprintln(w)
	var env []Entry
	for _, d := range Docs(root) {
		for _, e := range d.Environment {
			if !slices.ContainsFunc(env, func(x Entry) bool { return x.Name == e.Name }) {
				env = append(env, e)
			}
		}
	}
	writeEntries(w, env)
	fmt.Fprintln(w)
	fmt.Fprintln(w, wrap("COMMAND gets leaderrun's environment, plus:", helpWidth))
	fmt.Fprintln(w)
	writeEntries(w, commandEnv)
}

// writeEntries prints rows of a name and its text, the text wrapped in a
// column; a name too wide for the column stands on a line of its own.
func writeEntries(w io.Writer, rows []Entry) { writeEntriesAt(w, rows, entryColumn(rows)) }

// entryColumn is where the text of rows begins: after the widest name
// that fits within 28 columns.
func entryColumn(rows []Entry) int {
	const maxCol = 28
	col := 12
	for _, r := range rows {
		if n := entryIndent + len([]rune(r.Name)) + 2; n <= maxCol {
			col = max(col, n)
		}
	}
	return col
}

const entryIndent = 2

func writeEntriesAt(w io.Writer, rows []Entry, col int) {
	pad := strings.Repeat(" ", col)
	for _, r := range rows {
		name := strings.Repeat(" ", entryIndent) + r.Name
		text := strings.Split(wrap(r.Text, helpWidth-col), "\n")
		if n := len([]rune(name)); n+2 <= col {
			text[0] = name + strings.Repeat(" ", col-n) + text[0]
		} else {
			fmt.Fprintln(w, name)
			text[0] = pad + text[0]
		}
		for i := 1; i < len(text); i++ {
			text[i] = pad + text[i]
		}
		fmt.Fprintln(w, strings.Join(text, "\n"))
	}
}

// wrap fills text into lines of at most width columns, breaking at
// spaces; a word wider than width stands alone.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(text) {
		l := len([]rune(word))
		switch {
		case n == 0:
		case n+1+l > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += l
	}
	return b.String()
}
