package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync"
)

// Errors of a read-only Open (Options.ReadOnly), for errors.Is.
var (
	// ErrNoLedger: there is no ledger at the path (no file, or an empty
	// one that nothing has written yet). A read-only Open never creates it.
	ErrNoLedger = errors.New("sqlite: no ledger at this path")
	// ErrSchemaTooOld: the ledger was written by an older mcpledger and
	// needs a migration, which a read-only Open never runs.
	ErrSchemaTooOld = errors.New("sqlite: database schema is older than this build")
	// ErrReadOnly: a write on a Store opened with Options.ReadOnly.
	ErrReadOnly = errors.New("sqlite: the ledger is open read-only")
)

// checkReadable is the read-only counterpart of prepareFile: the file
// must exist, be a regular file that is not empty, and start with the
// SQLite header. It creates and changes nothing.
func checkReadable(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlite: %s does not exist: %w", path, ErrNoLedger)
	}
	if err != nil {
		return fmt.Errorf("sqlite: stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("sqlite: %s is not a regular file: %w", path, ErrNotDatabase)
	}
	if fi.Size() == 0 {
		// SQLite would take an empty file for an empty database, and a
		// read-write open would then write the schema into it.
		return fmt.Errorf("sqlite: %s is an empty file, not yet a ledger: %w", path, ErrNoLedger)
	}
	return checkHeader(path)
}

// checkSchema refuses, for a read-only Open, a database whose schema is
// not the one this build reads: a foreign or newer one (as migrate does)
// and an older one or one never migrated, which only a read-write Open
// brings up to date.
func (s *Store) checkSchema(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	version, err := s.checkOwner(ctx, len(ms))
	if err != nil {
		return err
	}
	switch {
	case version == 0:
		return fmt.Errorf("sqlite: %s holds no ledger yet: %w", s.path, ErrNoLedger)
	case version < len(ms):
		return fmt.Errorf("sqlite: %s has schema version %d and this build reads version %d; open it once for writing to migrate it: %w", s.path, version, len(ms), ErrSchemaTooOld)
	}
	return nil
}

// warned holds the paths whose wide file mode was reported, so a process
// that opens the same ledger many times warns once.
var warned sync.Map

// warnMode logs once per path when the ledger file can be read by its
// group or by others: it holds call arguments and results.
func warnMode(path string, log *slog.Logger) {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	if _, seen := warned.LoadOrStore(path, true); seen {
		return
	}
	if log == nil {
		log = slog.Default()
	}
	log.Warn(fmt.Sprintf("the ledger %s has mode %04o: other users can read the call arguments and results it holds; make it private with chmod 600 %s", path, fi.Mode().Perm(), path))
}

// checkHeader refuses a file that does not start with the SQLite header,
// as prepareFile does for a read-write Open.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, sqliteMagic) {
		return fmt.Errorf("sqlite: %s is not a SQLite database (it does not start with the SQLite header); refusing to use it: %w", path, ErrNotDatabase)
	}
	return nil
}
