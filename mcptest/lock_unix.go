//go:build unix

package mcptest

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f, waiting for other processes.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
