//go:build cgo

package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"syscall"

	"github.com/mattn/go-sqlite3"
)

// Driver names the SQLite driver this build uses: mattn/go-sqlite3, which
// needs cgo (a build without cgo uses driver_nocgo.go).
const Driver = "github.com/mattn/go-sqlite3"

// driverName is mattn/go-sqlite3 with the per-connection settings the DSN
// cannot express.
const driverName = "mcpledger_sqlite3"

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{
		ConnectHook: func(c *sqlite3.SQLiteConn) error {
			// After a checkpoint the WAL file shrinks back to this size,
			// so a burst of large results does not hold disk space.
			_, err := c.Exec("PRAGMA journal_size_limit = 67108864", nil)
			return err
		},
	})
}

// prepareCompanions has nothing to do: SQLite's own unix VFS creates the
// -wal and -shm files with the ledger's mode.
func prepareCompanions(string) error { return nil }

// dsnFor builds the connection string (see mattnStyleDSN).
func dsnFor(path string, o Options, readOnly bool) string {
	return mattnStyleDSN(path, o, readOnly)
}

type mattnConn struct{ *sqlite3.SQLiteConn }

func (c mattnConn) InTx() bool { return !c.AutoCommit() }

func rawConn(dc any) (drvConn, error) {
	c, ok := dc.(*sqlite3.SQLiteConn)
	if !ok {
		return nil, fmt.Errorf("sqlite: driver connection is %T", dc)
	}
	return mattnConn{c}, nil
}

func errorKind(err error) errKind {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return kindOther
	}
	if se.Code == sqlite3.ErrFull || se.SystemErrno == syscall.ENOSPC {
		return kindFull
	}
	switch se.Code {
	case sqlite3.ErrBusy, sqlite3.ErrLocked:
		return kindBusy
	case sqlite3.ErrNotADB, sqlite3.ErrCorrupt:
		return kindNotDatabase
	case sqlite3.ErrReadonly:
		return kindReadOnly
	}
	return kindOther
}

// readsReadOnlyShm: SQLite's unix VFS reads a WAL ledger through a -shm
// file it may not write (see immutableOpen).
func readsReadOnlyShm() bool { return true }

// driverReady: mattn/go-sqlite3 is always linked into a cgo build.
func driverReady() error { return nil }

func sqlDriver() string { return driverName }
