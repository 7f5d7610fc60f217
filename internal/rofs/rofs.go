// Package rofs makes a folder read-only for a test, in a way that holds
// for the test's own process, root included: a ledger's tests on a
// read-only mount need SQLite to really fail to create a -shm file there.
//
//	how := rofs.Dir(t, dir) // "a read-only bind mount", "chmod 0555", …
package rofs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Dir makes dir read-only until the test ends and says how it did. A test
// it cannot serve (root without the capabilities a mount or chattr needs)
// is skipped, naming what it tried. It checks that a file can no longer be
// created in dir.
func Dir(t testing.TB, dir string) string {
	t.Helper()
	how, err := readOnly(t, dir)
	if err != nil {
		t.Skipf("cannot make %s read-only for this process: %v", dir, err)
	}
	probe := filepath.Join(dir, ".rofs-probe")
	if err := os.WriteFile(probe, nil, 0o600); err == nil {
		_ = os.Remove(probe) // best effort: the test fails anyway
		t.Fatalf("%s made with %s still takes new files", dir, how)
	} else if !errors.Is(err, os.ErrPermission) && !isReadOnlyFS(err) {
		t.Fatalf("creating a file in the read-only %s: %v; want a permission or read-only file system error", dir, err)
	}
	return how
}
