// Command man writes leaderrun's man pages into a directory, one page per
// command, from the same model of each command that --help shows
// (cmd.Docs): go run ./scripts/man [-version V] DIR. Each page has NAME,
// SYNOPSIS, DESCRIPTION, OPTIONS (in help's groups), EXIT STATUS,
// ENVIRONMENT, EXAMPLES and SEE ALSO. scripts/release.sh runs it; it is not
// part of the leaderrun binary.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/leaderrun/leaderrun/cmd"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("man", flag.ContinueOnError)
	version := fs.String("version", "", "the version in the pages' footer (default: leaderrun's own)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/man [-version V] DIR")
		return 2
	}
	if err := write(fs.Arg(0), *version); err != nil {
		fmt.Fprintln(os.Stderr, "man:", err)
		return 1
	}
	return 0
}

// write generates one page per command into dir, dated SOURCE_DATE_EPOCH
// when it is set (a reproducible release), else today.
func write(dir, version string) error {
	if version == "" {
		version = cmd.Version()
	}
	date := time.Now().UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", s, err)
		}
		date = time.Unix(sec, 0).UTC()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range cmd.Docs(cmd.Command()) {
		f, err := os.Create(filepath.Join(dir, d.ManName()+".1"))
		if err != nil {
			return err
		}
		writePage(f, d, version, date)
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// writePage writes d as a man(7) page.
func writePage(w io.Writer, d cmd.Doc, version string, date time.Time) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p(`.TH %s 1 "%s" %s "User Commands"`, quoteArg(strings.ToUpper(d.ManName())), date.Format("2006-01-02"), quoteArg("leaderrun "+version))
	p(".SH NAME")
	fill(p, escape(d.ManName())+` \- `+escape(lowerFirst(d.Short)))

	p(".SH SYNOPSIS")
	p(".nf")
	for _, s := range d.Synopsis {
		name, rest, _ := strings.Cut(s, " ")
		if sub, more, ok := strings.Cut(rest, " "); ok && d.Path != name {
			name, rest = name+" "+sub, more // "leaderrun status" in bold
		}
		verbatim(p, `\fB`+escape(name)+`\fR `+escape(rest))
	}
	p(".fi")

	p(".SH DESCRIPTION")
	writeText(p, d.Description)

	if len(d.Commands) > 0 {
		p(".SH SUBCOMMANDS")
		for _, e := range d.Commands {
			p(".TP")
			p(`\fB%s\fR`, escape(d.Path+" "+e.Name))
			fill(p, escape(e.Text))
		}
	}

	p(".SH OPTIONS")
	for _, g := range d.Groups {
		p(".SS %s", quoteArg(g.Title))
		for _, f := range g.Flags {
			p(".TP")
			names := `\fB\-\-` + escape(f.Long) + `\fR`
			if f.Short != "" {
				names = `\fB\-` + escape(f.Short) + `\fR, ` + names
			}
			if f.Arg != "" {
				names += ` \fI` + escape(f.Arg) + `\fR`
			}
			p("%s", names)
			fill(p, escape(f.Text()))
		}
	}

	p(".SH EXIT STATUS")
	if d.Path == "leaderrun" {
		fill(p, escape("Every non-zero status of leaderrun's own comes after one log line on stderr that says why."))
	}
	writeEntries(p, d.ExitStatus)

	p(".SH ENVIRONMENT")
	if len(d.Environment) == 0 {
		fill(p, escape(d.Path+" reads no environment variable of its own."))
	} else {
		fill(p, "A flag on the command line wins over its variable; an empty variable counts as unset.")
		writeEntries(p, d.Environment)
	}
	if len(d.CommandEnv) > 0 {
		p(".SS %s", quoteArg("What COMMAND gets"))
		p("COMMAND gets leaderrun's environment, plus:")
		writeEntries(p, d.CommandEnv)
	}

	if d.Examples != "" {
		p(".SH EXAMPLES")
		p(".nf")
		for _, line := range strings.Split(d.Examples, "\n") {
			verbatim(p, escape(strings.TrimPrefix(line, "  "))) // the page indents
		}
		p(".fi")
	}

	p(".SH SEE ALSO")
	see := append(append([]string{}, d.SeeAlso...), "flock(1)", "timeout(1)", "systemd.time(7)")
	for i, s := range see {
		name, section, _ := strings.Cut(strings.TrimSuffix(s, ")"), "(")
		sep := ","
		if i == len(see)-1 {
			sep = ""
		}
		p(".BR %s (%s)%s", escape(name), section, sep)
	}
}

// writeText writes paragraphs (between blank lines); a paragraph with an
// indented line is kept as it is, the others are filled.
func writeText(p func(string, ...any), text string) {
	for i, para := range strings.Split(text, "\n\n") {
		if i > 0 {
			p(".PP")
		}
		lines := strings.Split(strings.Trim(para, "\n"), "\n")
		indented := false
		for _, l := range lines {
			indented = indented || strings.HasPrefix(l, " ")
		}
		if indented {
			p(".nf")
		}
		if indented {
			for _, l := range lines {
				verbatim(p, escape(strings.TrimPrefix(l, "  "))) // the page indents
			}
			p(".fi")
		} else {
			fill(p, escape(strings.Join(lines, " ")))
		}
	}
}

func writeEntries(p func(string, ...any), entries []cmd.Entry) {
	for _, e := range entries {
		p(".TP")
		p(`\fB%s\fR`, escape(e.Name))
		fill(p, escape(e.Text))
	}
}

// maxInput is the longest input line a page has (mandoc's style: 80).
const maxInput = 79

// fill writes escaped text as lines of words within maxInput bytes; roff
// fills them again for the reader's terminal.
func fill(p func(string, ...any), text string) {
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > maxInput {
			p("%s", safeStart(line))
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		p("%s", safeStart(line))
	}
}

// verbatim writes an escaped line of a no-fill block as it is; a line too
// long for the page's source goes on with a backslash, which roff joins
// again, so the reader sees one line.
func verbatim(p func(string, ...any), line string) {
	line = safeStart(line)
	for len(line) > maxInput {
		cut := 0
		for i := 0; i < len(line) && i < maxInput-1; {
			cut = i
			i += atomLen(line[i:])
		}
		if cut == 0 {
			break
		}
		p("%s\\", line[:cut])
		line = line[cut:]
	}
	p("%s", line)
}

// atomLen is the length of the character or escape sequence at s's start:
// a line is never cut inside one.
func atomLen(s string) int {
	if s[0] != '\\' || len(s) < 2 {
		return 1
	}
	switch s[1] {
	case '[':
		if end := strings.IndexByte(s, ']'); end > 0 {
			return end + 1
		}
	case '(':
		return min(4, len(s))
	case 'f':
		return min(3, len(s))
	}
	return 2
}

// safeStart keeps a line from beginning with a control character.
func safeStart(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		return `\&` + s
	}
	return s
}

// escape makes text safe in roff: backslashes, hyphens (minus signs, so
// that a copied flag works) and every non-ASCII character as an escape.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r > unicode.MaxASCII:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func quoteArg(s string) string { return `"` + strings.ReplaceAll(escape(s), `"`, `\(dq`) + `"` }

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	if len(r) > 1 && unicode.IsUpper(r[1]) { // an acronym stays
		return s
	}
	return string(unicode.ToLower(r[0])) + string(r[1:])
}
