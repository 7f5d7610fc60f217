package payments

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// createPrivate creates a missing database file with mode 0600, in folders
// made 0700, before SQLite opens it: SQLite would create it with the
// umask's mode (0644), readable by every user, and its -wal and -shm files
// take the mode of the database file. An existing file keeps its mode.
func createPrivate(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("payments: create the folder of %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("payments: create %s: %w", path, err)
	}
	return f.Close()
}
