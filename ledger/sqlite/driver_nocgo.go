//go:build !cgo

package sqlite

import (
	"errors"

	"github.com/mcpledger/mcpledger/internal/sqlitedialect"
)

// Driver names the SQLite driver this build uses. Without cgo it is
// ncruces/go-sqlite3, SQLite compiled to pure Go, which a program brings in
// by importing github.com/mcpledger/mcpledger/ledger/sqlite/purego: the
// same SQLite, the same file format and schema, so a ledger moves between
// a cgo build (mattn/go-sqlite3) and a cgo-free one.
const Driver = "github.com/ncruces/go-sqlite3"

// errNoDriver: a build without cgo that imported no driver.
var errNoDriver = errors.New("sqlite: " + sqlitedialect.Missing)

func dialect() (*sqlitedialect.Dialect, error) {
	d := sqlitedialect.Pure()
	if d == nil {
		return nil, errNoDriver
	}
	return d, nil
}

func driverReady() error {
	_, err := dialect()
	return err
}

func sqlDriver() string {
	if d := sqlitedialect.Pure(); d != nil {
		return d.SQLDriver
	}
	return ""
}

func prepareCompanions(path string) error { return sqlitedialect.Pure().PrepareCompanions(path) }

func dsnFor(path string, o Options, readOnly bool) string {
	return sqlitedialect.Pure().DSN(path, sqlitedialect.Settings{
		BusyTimeout:  o.BusyTimeout,
		Synchronous:  o.Synchronous.pragma(),
		Immutable:    o.immutable,
		ReadOnlyFile: o.ReadOnly,
	}, readOnly)
}

func rawConn(dc any) (drvConn, error) { return sqlitedialect.Pure().Conn(dc) }

func errorKind(err error) errKind {
	d := sqlitedialect.Pure()
	if d == nil {
		return kindOther
	}
	return d.Kind(err)
}

func readsReadOnlyShm() bool { return sqlitedialect.Pure().ReadsReadOnlyShm }
