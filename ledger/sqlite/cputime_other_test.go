//go:build !unix

package sqlite_test

import (
	"testing"
	"time"
)

// There is no getrusage here: benchmarks report no cpu-ns/op.
const cpuMeasured = false

func cpuTime(*testing.B) time.Duration { return 0 }
