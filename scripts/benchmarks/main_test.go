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
