package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/x/term"
	goisatty "github.com/mattn/go-isatty"
	"github.com/mattn/go-runewidth"

	"github.com/mcpledger/mcpledger/ledger"
)

// printf writes the command's output to stdout. A failed write is kept,
// not returned: the command goes on to its end (its ledger writes stand)
// and run reports the lost output once, in the exit code.
func (a *app) printf(format string, args ...any) { a.fprintf(a.io.Out, format, args...) }

// println is printf with fmt.Fprintln's spacing.
func (a *app) println(args ...any) {
	_, err := fmt.Fprintln(a.io.Out, args...)
	a.keepOutErr(err)
}

// fprintf writes the command's output to w (stdout, or the demo's story,
// help or a preview wherever they go) and keeps a failed write as printf
// does.
func (a *app) fprintf(w io.Writer, format string, args ...any) {
	_, err := fmt.Fprintf(w, format, args...)
	a.keepOutErr(err)
}

// keepOutErr keeps err, a failed write of the output, for run to report.
func (a *app) keepOutErr(err error) {
	if err == nil {
		return
	}
	a.outMu.Lock()
	defer a.outMu.Unlock()
	if a.outErr == nil {
		a.outErr = err
	}
}

// lostOutput is the first output write that failed, if any.
func (a *app) lostOutput() error {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	return a.outErr
}

// eprintf writes a note to stderr. Its error is dropped on purpose:
// stderr is where agentctl says what failed, so a failure to write there
// has nowhere left to go, and the command's result does not depend on it.
func (a *app) eprintf(format string, args ...any) { _, _ = fmt.Fprintf(a.io.Err, format, args...) }

// eprintln is eprintf with fmt.Fprintln's spacing.
func (a *app) eprintln(args ...any) { _, _ = fmt.Fprintln(a.io.Err, args...) }

func isatty(fd uintptr) bool {
	return goisatty.IsTerminal(fd) || goisatty.IsCygwinTerminal(fd)
}

// colour reports whether stdout gets ANSI colour: only on a terminal, and
// never when NO_COLOR is set or TERM is dumb.
func (a *app) colour() bool {
	if a.getenv("NO_COLOR") != "" || a.getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(a.io.Out)
}

// termWidth is the width of the terminal on w (0 when w is none), or
// COLUMNS when it is set.
func (a *app) termWidth(w io.Writer) int {
	if n, err := strconv.Atoi(a.getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	f, ok := w.(*os.File)
	if !ok || !isatty(f.Fd()) {
		return 0
	}
	width, _, err := term.GetSize(f.Fd())
	if err != nil || width <= 0 {
		return 80
	}
	return width
}

// tableWidth is the width tables fit on stdout: the terminal's (or
// COLUMNS), 80 columns in a pipe, and no limit under --wide (--json
// prints every value whole too).
func (a *app) tableWidth() int {
	if a.wide {
		return 0
	}
	return a.proseWidth(a.io.Out)
}

// flushTable writes t fitted to stdout, and says so on stderr when cells
// were cut.
func (a *app) flushTable(t *table) error {
	if err := t.fit(a.tableWidth()).flush(); err != nil {
		return err
	}
	var gave []string
	if len(t.dropped) > 0 {
		gave = append(gave, strings.Join(t.dropped, " and ")+" left out")
	}
	if t.cut {
		gave = append(gave, "cells cut")
	}
	if len(gave) > 0 {
		note := fmt.Sprintf("(%s to fit %d columns; --wide shows all, --json everything)", strings.Join(gave, ", "), t.width)
		a.eprintln(wrapIndent(note, a.proseWidth(a.io.Err), "", " "))
	}
	return nil
}

// printJSON writes v as one line of JSON: --json prints one object per result
// so a script can read the output line by line.
func (a *app) printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding JSON output: %w", err)
	}
	b = append(b, '\n')
	_, err = a.io.Out.Write(b)
	return err
}

// table writes aligned columns that fit the terminal: when the rows are
// wider than width, the widest columns are cut (with an ellipsis) until
// they fit, so a terminal never wraps a row mid-word. A width of 0 (not a
// terminal, or --wide) cuts nothing. Colour codes are added after the
// padding, so they never count as width.
type table struct {
	out    io.Writer
	colour bool
	width  int
	rows   [][]cell
	// whole are the columns never cut (times, states, counts): a cut
	// timestamp says nothing.
	whole map[int]bool
	// first are the columns given up before any other, in order: cut
	// down to minColumn, then left out whole, so the names that identify
	// a row (a tool, a key) keep their width longest.
	first []int
	// cut is set by flush when a cell was shortened; dropped names the
	// columns left out.
	cut     bool
	dropped []string
}

// cell is the plain text of a table cell and its colour ("" for none).
type cell struct {
	text, code string
}

func newTable(out io.Writer, colour bool, header ...string) *table {
	t := &table{out: out, colour: colour}
	t.row(header...)
	return t
}

// keep marks columns that are never cut to fit.
func (t *table) keep(cols ...int) *table {
	if t.whole == nil {
		t.whole = map[int]bool{}
	}
	for _, c := range cols {
		t.whole[c] = true
	}
	return t
}

// giveUpFirst marks columns given up, in this order, before the others
// when the rows must be cut to fit: cut, then left out.
func (t *table) giveUpFirst(cols ...int) *table {
	t.first = cols
	return t
}

// fit makes the table fit width columns (0: no limit).
func (t *table) fit(width int) *table {
	t.width = width
	return t
}

func (t *table) row(cells ...string) {
	r := make([]cell, len(cells))
	for i, c := range cells {
		r[i] = unpaint(c)
	}
	t.rows = append(t.rows, r)
}

// unpaint splits a cell made by paint into its text and colour.
func unpaint(s string) cell {
	if len(s) >= len(plain)+len(reset) && strings.HasPrefix(s, "\x1b[") && strings.HasSuffix(s, reset) {
		return cell{text: s[len(plain) : len(s)-len(reset)], code: s[:len(plain)]}
	}
	return cell{text: printable(s, false)}
}

// columnGap is the space between columns.
const columnGap = 2

// minColumn is the narrowest a column is cut to (its header may be wider).
const minColumn = 8

func (t *table) flush() error {
	widths := t.widths()
	var b strings.Builder
	for _, r := range t.rows {
		b.Reset()
		last := len(r) - 1
		for last > 0 && widths[last] < 0 {
			last--
		}
		for i, c := range r {
			if widths[i] < 0 {
				continue // left out to fit
			}
			text := c.text
			if n := runewidth.StringWidth(text); n > widths[i] {
				text = runewidth.Truncate(text, widths[i], "…")
				t.cut = true
			}
			pad := ""
			if i < last {
				pad = strings.Repeat(" ", widths[i]-runewidth.StringWidth(text)+columnGap)
			}
			if t.colour && c.code != "" {
				text = c.code + text + reset
			}
			b.WriteString(text)
			b.WriteString(pad)
			if i == last {
				break
			}
		}
		b.WriteByte('\n')
		if _, err := io.WriteString(t.out, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// widths is each column's width: its widest cell, then, while the row is
// wider than t.width, the columns given up first lose one column at a
// time down to minColumn, then are left out (-1) one by one, then the
// widest of the other columns that may be cut loses one at a time.
func (t *table) widths() []int {
	var w []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], runewidth.StringWidth(c.text))
		}
	}
	if t.width <= 0 || len(w) == 0 {
		return w
	}
	total := func() int {
		n, cols := 0, 0
		for _, x := range w {
			if x >= 0 {
				n += x
				cols++
			}
		}
		return n + columnGap*(cols-1)
	}
	first := map[int]bool{}
	for _, c := range t.first {
		first[c] = true
	}
	widest := func(firsts bool) int {
		c := -1
		for i := range w {
			if !t.whole[i] && first[i] == firsts && w[i] > minColumn && (c < 0 || w[i] > w[c]) {
				c = i
			}
		}
		return c
	}
	for total() > t.width {
		if c := widest(true); c >= 0 {
			w[c]--
			continue
		}
		if i := slices.IndexFunc(t.first, func(c int) bool { return w[c] >= 0 }); i >= 0 {
			c := t.first[i]
			w[c] = -1
			if len(t.rows) > 0 && c < len(t.rows[0]) {
				t.dropped = append(t.dropped, t.rows[0][c].text)
			}
			continue
		}
		c := widest(false)
		if c < 0 {
			break // as narrow as it gets: the terminal wraps
		}
		w[c]--
	}
	return w
}

// ANSI colours with codes of one length each (ESC [ 3 x m).
const (
	red     = "\x1b[31m"
	green   = "\x1b[32m"
	yellow  = "\x1b[33m"
	blue    = "\x1b[34m"
	magenta = "\x1b[35m"
	plain   = "\x1b[39m" // default colour, same length as the others
	reset   = "\x1b[0m"
)

// paint colours a cell when colour is on.
func (t *table) paint(code, s string) string {
	s = printable(s, false)
	if !t.colour {
		return s
	}
	return code + s + reset
}

// printable escapes control characters in text that came from a server or
// the ledger, so it can neither move the cursor nor recolour the terminal,
// nor break a table row. keepLines keeps newlines and tabs (a tool's text
// result printed on its own).
func printable(s string, keepLines bool) string {
	clean := true
	for _, r := range s {
		if unicode.IsControl(r) && !(keepLines && (r == '\n' || r == '\t')) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// stateColour is the colour of a state in tables.
func stateColour(s ledger.State) string {
	switch s {
	case ledger.StateSucceeded:
		return green
	case ledger.StateFailed, ledger.StateDenied:
		return red
	case ledger.StateUnknown:
		return magenta
	case ledger.StateProcessing, ledger.StatePendingApproval:
		return yellow
	case ledger.StateRetryable:
		return blue
	}
	return plain
}

// timeText formats a time for tables: UTC, seconds, RFC 3339.
func timeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// clip shortens s to n runes for a table cell, marking the cut.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// orDash keeps empty cells visible in a table.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// What stdin is, for choosing who confirms a call.
const (
	stdinNone     = iota // closed, /dev/null or another device: no one to ask
	stdinTerminal        // a person at a terminal
	stdinPipe            // a pipe or a file: plain prompts a script can answer
)

func stdinKind(r any) int {
	f, ok := r.(*os.File)
	if !ok {
		if r == nil {
			return stdinNone
		}
		// An in-process reader (tests, embedding) answers like a pipe.
		return stdinPipe
	}
	if isatty(f.Fd()) {
		return stdinTerminal
	}
	info, err := f.Stat()
	if err != nil {
		return stdinNone
	}
	if m := info.Mode(); m&os.ModeNamedPipe != 0 || m.IsRegular() || m&os.ModeSocket != 0 {
		return stdinPipe
	}
	return stdinNone
}
