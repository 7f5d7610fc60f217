package terminal

import (
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/mattn/go-runewidth"
)

// defaultWidth is the width a summary is wrapped to when the output is not
// a terminal whose size can be read.
const defaultWidth = 80

// width is the number of columns of out: Prompt.Width, else the terminal's,
// else defaultWidth.
func (t *Prompt) width(out io.Writer) int {
	if t.Width > 0 {
		return t.Width
	}
	if f, ok := out.(*os.File); ok && term.IsTerminal(f.Fd()) {
		if w, _, err := term.GetSize(f.Fd()); err == nil && w >= 20 {
			return w
		}
	}
	return defaultWidth
}

// wrap breaks every line of text longer than width columns at spaces, never
// inside a word, and indents the continuation lines as far as the line's
// value begins (past "  label:   "), so the summary reads as a table. A
// word longer than a whole line is cut, with nothing else on its line.
func wrap(text string, width int) string {
	var b strings.Builder
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		wrapLine(&b, line, width)
	}
	return b.String()
}

func wrapLine(b *strings.Builder, line string, width int) {
	if runewidth.StringWidth(line) <= width {
		b.WriteString(line)
		return
	}
	indent := valueIndent(line)
	if indent > width/2 {
		indent = 0
	}
	pad := strings.Repeat(" ", indent)
	col := 0
	lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
	b.WriteString(lead)
	col = len(lead)
	first := true
	for _, w := range strings.Fields(line) {
		ww := runewidth.StringWidth(w)
		switch {
		case first:
		case col+1+ww <= width:
			b.WriteByte(' ')
			col++
		default:
			b.WriteByte('\n')
			b.WriteString(pad)
			col = indent
		}
		first = false
		for ww > width-col && width-col > 0 {
			// A word too long for its line: cut it at the line's end.
			cut := runewidth.Truncate(w, width-col, "")
			if cut == "" {
				break
			}
			b.WriteString(cut)
			w = w[len(cut):]
			ww = runewidth.StringWidth(w)
			b.WriteByte('\n')
			b.WriteString(pad)
			col = indent
		}
		b.WriteString(w)
		col += ww
	}
}

// valueIndent is where the value of a "  label:   value" row starts, or
// the line's own leading spaces.
func valueIndent(line string) int {
	lead := len(line) - len(strings.TrimLeft(line, " "))
	rest := line[lead:]
	colon := strings.Index(rest, ": ")
	if lead == 0 || colon < 0 || strings.ContainsRune(rest[:colon], ' ') {
		return lead
	}
	after := rest[colon+1:]
	return lead + colon + 1 + len(after) - len(strings.TrimLeft(after, " "))
}
