package terminal

import (
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
)

func TestWrapNeverSplitsAWord(t *testing.T) {
	long := "  why:         the policy asks before payments because create_payment moves money from the account of acme to a payee outside the company"
	tests := []struct {
		name  string
		text  string
		width int
	}{
		{"a row", long, 40},
		{"a narrow terminal", long, 24},
		{"a short line stays", "  key:         order-7", 80},
		{"a word longer than a line", "  key:         " + strings.Repeat("k", 70), 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := wrap(tc.text, tc.width)
			for _, l := range strings.Split(got, "\n") {
				if runewidth.StringWidth(l) > tc.width {
					t.Errorf("line %q is %d columns; want at most %d", l, runewidth.StringWidth(l), tc.width)
				}
			}
			// The words come back in order; only the long word may be cut.
			if strings.Join(strings.Fields(got), "") != strings.Join(strings.Fields(tc.text), "") {
				t.Errorf("wrap(%q) = %q; lost or moved text", tc.text, got)
			}
			if !strings.Contains(tc.name, "longer") {
				want := strings.Fields(tc.text)
				if gotWords := strings.Fields(got); len(gotWords) != len(want) {
					t.Errorf("wrap split words: %d words, want %d: %q", len(gotWords), len(want), got)
				}
			}
		})
	}
	// Continuation lines line up under the value.
	lines := strings.Split(wrap(long, 40), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[1], strings.Repeat(" ", 15)) || lines[1][15] == ' ' {
		t.Errorf("continuation %q; want it indented to column 15, where the value starts", lines[1])
	}
}
