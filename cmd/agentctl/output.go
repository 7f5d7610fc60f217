package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	goisatty "github.com/mattn/go-isatty"

	"github.com/mcpledger/mcpledger/ledger"
)

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

// table writes aligned columns. tabwriter counts the bytes of colour codes
// as width, so with colour on every cell carries a code of the same length
// (plain when paint gave it none) and the columns stay aligned.
type table struct {
	w      *tabwriter.Writer
	colour bool
}

func newTable(out io.Writer, colour bool, header ...string) *table {
	t := &table{w: tabwriter.NewWriter(out, 0, 0, 2, ' ', 0), colour: colour}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		if !strings.HasPrefix(c, "\x1b[") {
			// paint already cleaned and coloured this one.
			cells[i] = t.paint(plain, c)
		}
	}
	fmt.Fprintln(t.w, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.w.Flush() }

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
