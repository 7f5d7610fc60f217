package payments_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpledger/mcpledger/internal/payments"
)

// Every file the payments server creates holds payments or call arguments:
// it is private to its user, and so is a folder it creates.
func TestFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	app, err := payments.Open(context.Background(), payments.Config{DB: filepath.Join(dir, "payments.db")})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 3 {
		t.Fatalf("%s holds %d files; want the payments, ledger and downstream databases", dir, len(entries))
	}
	check := func(path string, want os.FileMode) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode(); got != want {
			t.Errorf("mode of %s = %v; want %v", path, got, want)
		}
	}
	check(dir, os.ModeDir|0o700)
	for _, e := range entries {
		check(filepath.Join(dir, e.Name()), 0o600)
	}
}
