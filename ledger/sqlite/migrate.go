package sqlite

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// applicationID marks a SQLite file as an mcpledger ledger ("MCPL") so a
// database of another program is never mistaken for an empty ledger.
const applicationID = 0x4d43504c

// sqliteMagic opens every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. File names
// are NNNN_name.sql; versions start at 1 and have no gaps.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("sqlite: read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			return nil, fmt.Errorf("sqlite: migration %q: name is not NNNN_name.sql", e.Name())
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("sqlite: migration %q: %w", e.Name(), err)
		}
		b, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("sqlite: migration %q: %w", e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("sqlite: migration %q: want version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// prepareFile creates a missing database file 0600 in a 0700 folder, and
// refuses an existing file that is not a SQLite database before SQLite is
// allowed to touch it.
func prepareFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("sqlite: create folder of %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		// An empty file is a valid, empty SQLite database.
		return f.Close()
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	f, err = os.Open(path)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("sqlite: stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("sqlite: %s is not a regular file: %w", path, ErrNotDatabase)
	}
	if fi.Size() == 0 {
		return nil
	}
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, sqliteMagic) {
		return fmt.Errorf("sqlite: %s is not a SQLite database (it does not start with the SQLite header); refusing to use or overwrite it: %w", path, ErrNotDatabase)
	}
	widenCompanions(path, fi.Mode().Perm())
	return nil
}

// migrate checks that the database is ours and applies the missing
// migrations, each in its own transaction. It reads before it writes, so a
// foreign or newer database is refused unmodified; WAL mode is switched on
// only once the file is known to be a ledger.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	version, err := s.checkOwner(ctx, len(ms))
	if err != nil {
		return err
	}
	var mode string
	if err := s.wdb.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return fmt.Errorf("sqlite: enable WAL on %s: %w", s.path, s.classify(err))
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("sqlite: %s refused WAL mode (journal_mode is %q)", s.path, mode)
	}
	// An up-to-date database needs no write transaction, so Open works
	// while another process holds the write lock.
	for _, m := range ms[min(version, len(ms)):] {
		if err := s.apply(ctx, m, len(ms)); err != nil {
			return err
		}
	}
	return nil
}

// checkOwner refuses a foreign SQLite database and a newer schema.
func (s *Store) checkOwner(ctx context.Context, known int) (version int, err error) {
	var appID, objects int
	// One statement reads all three from one snapshot, so a concurrent
	// first migration by another process cannot be half seen.
	err = s.wdb.QueryRowContext(ctx, `SELECT
		(SELECT application_id FROM pragma_application_id()),
		(SELECT user_version FROM pragma_user_version()),
		(SELECT count(*) FROM sqlite_schema)`).Scan(&appID, &version, &objects)
	if err != nil {
		return 0, fmt.Errorf("sqlite: read %s: %w", s.path, s.classify(err))
	}
	switch {
	case appID != 0 && appID != applicationID:
		return 0, fmt.Errorf("sqlite: %s belongs to another application (application_id %#x); refusing to use it: %w", s.path, appID, ErrNotDatabase)
	case appID == 0 && objects > 0:
		return 0, fmt.Errorf("sqlite: %s is a SQLite database of another application (it has tables but no mcpledger mark); refusing to use it: %w", s.path, ErrNotDatabase)
	case version > known:
		return 0, fmt.Errorf("sqlite: %s has schema version %d but this build knows versions up to %d; upgrade mcpledger: %w", s.path, version, known, ErrSchemaTooNew)
	}
	return version, nil
}

// apply runs one migration unless another process applied it first (the
// version is re-read inside the write transaction).
func (s *Store) apply(ctx context.Context, m migration, known int) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: migrate %s to %d: %w", s.path, m.version, s.classify(err))
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit; on an error path the error returned says why
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("sqlite: migrate %s to %d: %w", s.path, m.version, s.classify(err))
	}
	if version > known {
		return fmt.Errorf("sqlite: %s has schema version %d but this build knows versions up to %d; upgrade mcpledger: %w", s.path, version, known, ErrSchemaTooNew)
	}
	if version >= m.version {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", m.name, s.classify(err))
	}
	// PRAGMA arguments cannot be bound; both values are integers we own.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d; PRAGMA application_id = %d", m.version, applicationID)); err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", m.name, s.classify(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", m.name, s.classify(err))
	}
	return nil
}
