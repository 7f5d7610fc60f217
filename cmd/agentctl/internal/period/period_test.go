package period_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/cmd/agentctl/internal/period"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7d", 7 * 24 * time.Hour, true},
		{"0d", 0, true},
		{"90m", 90 * time.Minute, true},
		{"36h", 36 * time.Hour, true},
		{"0s", 0, true},
		{"-1d", 0, false},
		{"-5m", 0, false},
		{"1.5d", 0, false},
		{"d", 0, false},
		{"7days", 0, false},
		{"99999999999d", 0, false},
		{"", 0, false},
	} {
		got, err := period.Parse(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"7d", "90m", "-1d", "1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := period.Parse(s)
		if err == nil && d < 0 {
			t.Errorf("Parse(%q) = %v; want no negative length", s, d)
		}
	})
}

func ExampleParse() {
	d, _ := period.Parse("7d")
	fmt.Println(d)
	// Output: 168h0m0s
}
