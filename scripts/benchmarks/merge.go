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
// ("not run") keeps old's. note, a line, goes below the machine's line,
// replacing an earlier note that begins the same way up to its colon-free
// title. It returns the merged text and the fresh rows old has no place
// for (a benchmark new since the last whole run: regenerate it all).
func merge(old, fresh, note string) (string, []string) {
	rows := map[string]string{}
	var order []string
	eachRow(fresh, func(key, line string) {
		if strings.Contains(line, "| not run |") {
			return
		}
		if _, seen := rows[key]; !seen {
			order = append(order, key)
		}
		rows[key] = line
	})
	used := map[string]bool{}
	lines := strings.Split(old, "\n")
	i := 0
	eachRow(old, func(key, line string) {
		for lines[i] != line {
			i++
		}
		if r, ok := rows[key]; ok {
			lines[i] = r
			used[key] = true
		}
		i++
	})
	var left []string
	for _, k := range order {
		if !used[k] {
			left = append(left, rows[k])
		}
	}
	return withNote(strings.Join(lines, "\n"), note), left
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
