//go:build !linux && !darwin && !windows

package process

import (
	"errors"
	"fmt"
)

// bootID is empty where this package cannot tell a process's start time:
// owners are then never known dead, and their leases decide.
func bootID() string { return "" }

func processStart(pid int) (uint64, error) {
	return 0, fmt.Errorf("process: process %d: start time: %w", pid, errors.ErrUnsupported)
}
