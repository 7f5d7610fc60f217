package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestValues(t *testing.T) {
	results := map[string][]float64{
		"a": {300, 500},
		"b": {100, 100},
		"c": {50, 80},
		"d": {600, 1100},
		"e": {10}, // one round only
	}
	tests := []struct {
		name string
		r    ratio
		want []float64
	}{
		{"time", ratio{num: "a", den: "b"}, []float64{3, 5}},
		{"throughput", ratio{num: "b", den: "a", throughput: true}, []float64{3, 5}},
		{"overhead in floors", ratio{num: "a", sub: "b", den: "c"}, []float64{4, 5}},
		{"overhead against overhead", ratio{num: "a", sub: "b", den: "d", denSub: "b"}, []float64{0.4, 0.4}},
		{"rounds missing on one side", ratio{num: "a", den: "e"}, []float64{30}},
		{"not run", ratio{num: "a", den: "missing"}, []float64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := values(tc.r, results, nil)
			if !slices.Equal(got, tc.want) {
				t.Errorf("values(%+v) = %v; want %v", tc.r, got, tc.want)
			}
		})
	}
}

func TestMet(t *testing.T) {
	tests := []struct {
		target string
		v      float64
		want   string
	}{
		{"<= 1.5", 1.5, "met"},
		{"<= 1.5", 1.51, "**not met**"},
		{">= 3", 3.2, "met"},
		{">= 3", 2.9, "**not met**"},
		{"", 2, ""},
		{"about 2", 2, ""},
	}
	for _, tc := range tests {
		if got := met(tc.target, tc.v); got != tc.want {
			t.Errorf("met(%q, %v) = %q; want %q", tc.target, tc.v, got, tc.want)
		}
	}
}

func TestKeptSurvivesRegeneration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	hand := handWritten + "\nA profile, read by hand.\n"
	if err := os.WriteFile(path, []byte("# Benchmarks\n\nold figures\n"+hand), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := kept(path); got != hand {
		t.Errorf("kept = %q; want %q", got, hand)
	}
	md := render(map[string][]float64{"peer/Bare/first": {700e3}}, nil, nil, 1) + kept(path)
	if !strings.HasSuffix(md, hand) || strings.Contains(md, "old figures") {
		t.Errorf("regenerated file does not end with the kept section alone:\n%s", md)
	}
	if got := kept(filepath.Join(t.TempDir(), "none.md")); got != "" {
		t.Errorf("kept(missing file) = %q; want \"\"", got)
	}
}

// A partial run replaces only the rows it measured, each in its own table
// (two tables with one header stay apart), keeps the rest and says so
// below the machine's line, once however often it runs.
func TestMerge(t *testing.T) {
	old := strings.Join([]string{
		"# Benchmarks", "", "Machine: old box.", "",
		"| comparison | ratio |", "| --- | --- |",
		"| SQLite a / b | 1.04× |", "| client c / d | 2.00× |", "",
		"SQLite:", "", "| contender | first |", "| --- | --- |", "| bare | 1 ms |", "",
		"PostgreSQL:", "", "| contender | first |", "| --- | --- |", "| bare | 2 ms |", "",
		"## Where the time goes", "", "| kept | by hand |", "| --- | --- |", "| x | y |", "",
	}, "\n")
	fresh := strings.Join([]string{
		"# Benchmarks", "", "Machine: new box.", "",
		"| comparison | ratio |", "| --- | --- |",
		"| SQLite a / b | 1.10× |", "| client c / d | not run | |", "| new e / f | 3.00× |", "",
		"SQLite:", "", "| contender | first |", "| --- | --- |", "| bare | not run | |", "",
		"PostgreSQL:", "", "| contender | first |", "| --- | --- |", "| bare | 3 ms |", "",
	}, "\n")
	note := partialNote([]string{"SQLite ledger"}, "^SQLite", 5, "box", "1.00")
	got, left := merge(old, fresh, note)
	for _, want := range []string{"| SQLite a / b | 1.10× |", "| client c / d | 2.00× |", "SQLite:\n\n| contender | first |\n| --- | --- |\n| bare | 1 ms |",
		"PostgreSQL:\n\n| contender | first |\n| --- | --- |\n| bare | 3 ms |", "| x | y |", "Machine: old box.\n\n" + note + "\n\n| comparison"} {
		if !strings.Contains(got, want) {
			t.Errorf("merge kept no %q in:\n%s", want, got)
		}
	}
	if !strings.Contains(got, "| client c / d | 2.00× |\n| new e / f | 3.00× |\n") {
		t.Errorf("merge put the new row elsewhere than after the one fresh has before it:\n%s", got)
	}
	if len(left) != 0 {
		t.Errorf("merge left %q; want every row placed", left)
	}
	_, left = merge(old, fresh+"\n## New\n\n| a | b |\n| --- | --- |\n| c | d |\n", note)
	if !slices.Equal(left, []string{"| c | d |"}) {
		t.Errorf("merge left %q; want the row of a table old lacks", left)
	}
	again, _ := merge(got, fresh, note)
	if n := strings.Count(again, regeneratedPrefix); n != 1 || strings.Contains(again, "\n\n\n") {
		t.Errorf("a second partial run left %d notes (want 1), or blank lines doubled:\n%s", n, again)
	}
}
