//go:build !linux

package rofs

import (
	"errors"
	"os"
	"testing"
)

// readOnly makes dir read-only by its mode, which only a process without
// root privileges must obey.
func readOnly(t testing.TB, dir string) (string, error) {
	if os.Geteuid() == 0 {
		return "", errors.New("root ignores a folder's mode, and this system has no bind mount here")
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		return "", err
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) }) // so t.TempDir can remove it
	return "chmod 0555 (not root)", nil
}

func isReadOnlyFS(error) bool { return false }
