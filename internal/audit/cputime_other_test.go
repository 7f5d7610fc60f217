//go:build !unix

package audit_test

import (
	"testing"
	"time"
)

// cpuTime is unknown here: the benchmark reports no CPU figure.
func cpuTime(*testing.B) time.Duration { return 0 }
