package main

import (
	"fmt"
	"strings"
)

// regeneratedPrefix opens the line, below the machine's, that says which
// rows a partial run (-only) measured, and when.
const regeneratedPrefix = "Regenerated alone: "

// merge puts into old, a whole BENCHMARKS.md, the table rows of fresh (the
// output of a run of some groups only) that hold figures, each in place of
// the row of the same table and first cell; a row fresh has no figure for
// ("not run") keeps old's. A fresh row old lacks (a comparison added since)
// goes after the row fresh has before it, when old has that one. note, a
// line, goes below the machine's line, replacing an earlier note on the
// same groups. merge returns the merged text and the fresh rows it found
// no place for (a table old lacks: regenerate it all).
func merge(old, fresh, note string) (string, []string) {
	type row struct{ key, line string }
	var freshRows []row // in fresh's order, "not run" rows too
	eachRow(fresh, func(key, line string) { freshRows = append(freshRows, row{key, line}) })
	at := map[string]int{} // old's rows: key -> line number
	lines := strings.Split(old, "\n")
	i := 0
	eachRow(old, func(key, line string) {
		for lines[i] != line {
			i++
		}
		at[key] = i
		i++
	})
	after := map[int][]string{} // line number -> new rows to follow it
	var left []string
	for j, r := range freshRows {
		if strings.Contains(r.line, "| not run |") {
			continue
		}
		if n, ok := at[r.key]; ok {
			lines[n] = r.line
			continue
		}
		placed := false
		for k := j - 1; k >= 0 && !placed; k-- {
			if n, ok := at[freshRows[k].key]; ok && sameTable(freshRows[k].key, r.key) {
				after[n] = append(after[n], r.line)
				placed = true
			}
		}
		if !placed {
			left = append(left, r.line)
		}
	}
	out := make([]string, 0, len(lines))
	for n, l := range lines {
		out = append(out, l)
		out = append(out, after[n]...)
	}
	return withNote(strings.Join(out, "\n"), note), left
}

// sameTable reports whether two row keys (see eachRow) are of one table.
func sameTable(a, b string) bool {
	return a[:strings.LastIndex(a, "\n")] == b[:strings.LastIndex(b, "\n")]
}

// eachRow calls fn with each data row of md's tables (not the header or
// its separator) and its key: what introduces the table (the last heading
// or line ending in a colon before it), the table's header and the
// row's first cell, so that rows of two tables with the same header (the
// peer's SQLite and PostgreSQL contenders) stay apart.
func eachRow(md string, fn func(key, line string)) {
	var intro, header string
	inTable := false
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "| ") {
			inTable = false
			if strings.HasPrefix(line, "#") || strings.HasSuffix(line, ":") {
				intro = line
			}
			continue
		}
		if !inTable {
			inTable, header = true, line
			continue
		}
		if strings.HasPrefix(line, "| --- ") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		fn(intro+"\n"+header+"\n"+first, line)
	}
}

// withNote puts note on the line after the machine's, in place of an
// earlier note on the same groups.
func withNote(md, note string) string {
	lines := strings.Split(md, "\n")
	title, _, _ := strings.Cut(note, " (")
	out := make([]string, 0, len(lines)+2)
	placed := false
	for _, l := range lines {
		if strings.HasPrefix(l, regeneratedPrefix) {
			if t, _, _ := strings.Cut(l, " ("); t == title {
				if n := len(out); n > 0 && out[n-1] == "" {
					out = out[:n-1] // and the blank line before it
				}
				continue // replaced above
			}
		}
		out = append(out, l)
		if !placed && strings.HasPrefix(l, "Machine: ") {
			out = append(out, "", note)
			placed = true
		}
	}
	if !placed {
		out = append([]string{note, ""}, out...)
	}
	return strings.Join(out, "\n")
}

// partialNote is the note of a run of the groups titled titles.
func partialNote(titles []string, pattern string, rounds int, machine, load string) string {
	return fmt.Sprintf("%s%s (`go run ./scripts/benchmarks -only '%s'`, median of %d rounds; %s; one-minute load average %s at the start): their rows are from that run, every other row from the whole run above.",
		regeneratedPrefix, strings.Join(titles, ", "), pattern, rounds, machine, load)
}
