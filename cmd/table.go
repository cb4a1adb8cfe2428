package cmd

// Tables within the terminal: list's, history's and status's slot table,
// and status's "key: value" rows, each kept within the width of the
// terminal (COLUMNS, else the terminal's, else 80) by cutting the columns
// that may be cut (names, holders, runs, notes) with "…", widest first.
// -o json always has the whole values.

import (
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// defaultWidth is the width when neither COLUMNS nor a terminal says one.
const defaultWidth = 80

// outputWidth is the width w's tables keep within: COLUMNS when it is a
// positive number (a shell sets it for its terminal, a user for a pipe),
// else the terminal's when w is one, else 80.
func outputWidth(w io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	return defaultWidth
}

// table is rows of cells under an optional header, aligned in columns
// gap spaces apart, each line starting with indent.
type table struct {
	header []string // nil: no header line
	rows   [][]string
	cut    []bool // the columns that may be cut to fit (every other keeps its width)
	gap    int
	indent string
}

// minCut is the narrowest a column that may be cut becomes: room for a few
// characters and the "…".
const minCut = 6

// widths are the columns' widths within width: each as wide as its widest
// cell, then the widest column that may be cut narrowed by one, and again,
// until the line fits or none can narrow (none below its header or minCut).
func (t *table) widths(width int) []int {
	n := len(t.header)
	for _, r := range t.rows {
		n = max(n, len(r))
	}
	w := make([]int, n)
	floor := make([]int, n)
	for i := range n {
		floor[i] = minCut
		if i < len(t.header) {
			w[i] = cells(t.header[i])
			floor[i] = max(floor[i], w[i])
		}
	}
	for _, r := range t.rows {
		for i, c := range r {
			w[i] = max(w[i], cells(c))
		}
	}
	total := cells(t.indent) + t.gap*(n-1)
	for _, x := range w {
		total += x
	}
	for total > width {
		widest := -1
		for i := range n {
			if i < len(t.cut) && t.cut[i] && w[i] > floor[i] && (widest < 0 || w[i] > w[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break // nothing left to cut: the line stays wider
		}
		w[widest]--
		total--
	}
	return w
}

// write prints the table within width.
func (t *table) write(out io.Writer, width int) error {
	w := t.widths(width)
	var b strings.Builder
	line := func(r []string) {
		var l strings.Builder
		l.WriteString(t.indent)
		for i, c := range r {
			c = cutCells(c, w[i])
			l.WriteString(c)
			if i < len(r)-1 {
				l.WriteString(strings.Repeat(" ", w[i]-cells(c)+t.gap))
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	if t.header != nil {
		line(t.header)
	}
	for _, r := range t.rows {
		line(r)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// cells is how many columns s takes: one per character.
func cells(s string) int { return utf8.RuneCountInString(s) }

// cutCells cuts s to n columns, ending in "…" when cut.
func cutCells(s string, n int) string {
	if cells(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// keyValues are status's rows, "key: value", the values aligned and cut to
// the width.
type keyValues struct{ t table }

func (kv *keyValues) add(key, value string) {
	kv.t.rows = append(kv.t.rows, []string{key + ":", value})
}

func (kv *keyValues) write(out io.Writer, width int) error {
	kv.t.gap, kv.t.cut = 1, []bool{false, true}
	return kv.t.write(out, width)
}
