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
	"path/filepath"
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
	// ErrWALUnreadable: the ledger's -wal file holds writes that SQLite
	// reads only through a -shm file, which its folder cannot hold (a
	// read-only mount) and which is not there.
	ErrWALUnreadable = errors.New("sqlite: the ledger's -wal file cannot be read without a -shm file")
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

// immutableOpen decides how a read-only Open reads the WAL-mode ledger
// at path. SQLite reads a WAL database through a -shm file beside it,
// which it creates when missing (the C build also reads one it may not
// write; the pure-Go build does not). In a folder this process cannot
// write (a read-only mount, a snapshot) and without a -shm file it can
// use, SQLite can still read the ledger file alone, opened immutable, when
// the -wal file is missing or empty: the ledger file is then the whole
// ledger. A -wal file with writes in it cannot be read that way (immutable
// ignores it, and would show the ledger as it was before them): that is
// ErrWALUnreadable, with what to do.
//
// No writer can work on such a ledger through this folder; one working
// through another mount of it has made a -shm file, which the C build
// reads through, not immutable.
func immutableOpen(path string) (bool, error) {
	shm, wal := path+"-shm", path+"-wal"
	if writable(filepath.Dir(path)) {
		return false, nil
	}
	_, err := os.Stat(shm)
	haveShm := err == nil
	if haveShm && (readsReadOnlyShm() || writable(shm)) {
		return false, nil
	}
	fi, err := os.Stat(wal)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("sqlite: stat %s: %w", wal, err)
	case fi.Size() == 0:
		return true, nil
	case haveShm:
		return false, walUnreadable(fmt.Sprintf("sqlite: %s holds writes that this build (pure-Go SQLite) reads only through a writable -shm file, and %s is read-only; read it with a cgo build, or copy %s with its -wal and -shm files into a writable folder and read the copy",
			wal, shm, path))
	}
	return false, walUnreadable(fmt.Sprintf("sqlite: %s holds writes that SQLite reads only through a -shm file, which the read-only folder cannot hold; copy %s with its -wal file into a writable folder and read the copy",
		wal, path))
}

// walUnreadable is an ErrWALUnreadable whose message says what to do,
// without the sentinel's text after it.
type walUnreadable string

func (e walUnreadable) Error() string        { return string(e) }
func (e walUnreadable) Is(target error) bool { return target == ErrWALUnreadable }

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
