package monitor

// The end ping's body: the run's summary line, then COMMAND's last output,
// within the monitor's limit.

import (
	"fmt"
	"unicode/utf8"
)

// endBody is summary (one line) followed by output, in at most limit bytes
// (0: no limit). What does not fit is the front of output: the end, where
// a failing job says why, is kept, after a line that says how much was left
// out. The cut falls on a character's start, never inside one.
func endBody(summary string, output []byte, limit int) []byte {
	if summary != "" && summary[len(summary)-1] != '\n' {
		summary += "\n"
	}
	if limit <= 0 || len(summary)+len(output) <= limit {
		return append([]byte(summary), output...)
	}
	// The note's length with the most digits the count can have: the note
	// actually written is no longer.
	note := func(n int) string { return fmt.Sprintf("[%d earlier bytes of output left out]\n", n) }
	room := limit - len(summary) - len(note(len(output)))
	if room <= 0 {
		// Not even the summary and the note fit: the summary alone, cut.
		return []byte(summary[:min(len(summary), limit)])
	}
	from := len(output) - room
	for i := 0; i < utf8.UTFMax-1 && from < len(output) && !utf8.RuneStart(output[from]); i++ {
		from++
	}
	body := make([]byte, 0, limit)
	body = append(body, summary...)
	body = append(body, note(from)...)
	return append(body, output[from:]...)
}
