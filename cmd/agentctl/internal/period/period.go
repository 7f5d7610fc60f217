// Package period reads the lengths of time agentctl's flags and its
// console take: a Go duration ("90m", "36h") or a whole number of days
// ("7d"), which time.ParseDuration does not read.
//
//	d, err := period.Parse("7d") // 168h0m0s
//
// One function for --since, --older-than and the console's range: no
// well-kept module for it is among those this project may take
// (str2duration is not), and it is eight lines.
package period

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Parse reads s, a Go duration or a whole number of days written "7d".
// A negative length is an error; zero is not (callers that need a positive
// one say so in their own words).
func Parse(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > int(time.Duration(1<<63-1)/(24*time.Hour)) {
			return 0, fmt.Errorf("period: %q is not a whole number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("period: %w", err)
	}
	if d < 0 {
		return 0, fmt.Errorf("period: %q is negative", s)
	}
	return d, nil
}
