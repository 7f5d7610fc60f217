package main

import (
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
)

// defaultWidth is the width prose (help, the demo's story) is wrapped to
// when the output is no terminal or its size is unknown.
const defaultWidth = 80

// proseWidth is the width prose written to w wraps at: the terminal's (or
// COLUMNS), else defaultWidth.
func (a *app) proseWidth(w io.Writer) int {
	if n := a.termWidth(w); n > 0 {
		return n
	}
	return defaultWidth
}

// wrapIndent wraps each line of s to width columns at spaces, the first
// line of a paragraph prefixed with first and the lines it wraps onto
// with rest. Words are never split: a key or a path breaks only at a
// space (a hyphen is part of a name here, unlike in text wrappers made for
// prose), and a word wider than the line stands alone on its line.
func wrapIndent(s string, width int, first, rest string) string {
	var b strings.Builder
	for i, para := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		wrapLine(&b, para, width, first, rest)
	}
	return b.String()
}

func wrapLine(b *strings.Builder, line string, width int, first, rest string) {
	if runewidth.StringWidth(first+line) <= width {
		b.WriteString(first + line) // fits: kept as written, spacing and all
		return
	}
	// A line's own indentation carries onto the lines it wraps onto.
	trimmed := strings.TrimLeft(line, " ")
	own := line[:len(line)-len(trimmed)]
	prefix := first + own
	col := runewidth.StringWidth(prefix)
	b.WriteString(prefix)
	fresh := true // nothing but the prefix on this line yet
	for _, word := range strings.Fields(trimmed) {
		w := runewidth.StringWidth(word)
		if !fresh && col+1+w > width {
			prefix = rest + own
			b.WriteByte('\n')
			b.WriteString(prefix)
			col, fresh = runewidth.StringWidth(prefix), true
		}
		if !fresh {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += w
		fresh = false
	}
}
