// Package sqlitedialect is the seam between ledger/sqlite and a SQLite
// driver that the library's module does not require. A build with cgo uses
// mattn/go-sqlite3 and never looks here; a build without cgo uses the
// driver that github.com/mcpledger/mcpledger/ledger/sqlite/purego
// registers here when a program imports it.
//
// The pure-Go driver lives in a module of its own so that a program that
// builds with cgo does not carry it, nor the Go release it requires, in its
// module graph.
package sqlitedialect

import (
	"context"
	"database/sql/driver"
	"sync/atomic"
	"time"
)

// Conn is what the ledger's writer needs from the driver's connection: the
// driver's own statements, without database/sql's per-call machinery, and
// whether a transaction is still open after a failed COMMIT.
type Conn interface {
	ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error)
	QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error)
	InTx() bool
}

// Kind is what the ledger needs to know of a driver error.
type Kind int

// The kinds of driver error the ledger tells apart.
const (
	KindOther       Kind = iota
	KindBusy             // SQLITE_BUSY or SQLITE_LOCKED
	KindNotDatabase      // SQLITE_NOTADB or SQLITE_CORRUPT
	KindReadOnly         // SQLITE_READONLY
	KindFull             // SQLITE_FULL, or an I/O error of ENOSPC
)

// Settings are the connection settings the ledger asks of a driver.
type Settings struct {
	BusyTimeout time.Duration
	// Synchronous is the value of PRAGMA synchronous (FULL, NORMAL).
	Synchronous string
	// Immutable opens the file as one no process changes.
	Immutable bool
	// ReadOnlyFile opens the file read-only (the ledger's ReadOnly option).
	ReadOnlyFile bool
}

// Dialect is one driver's side of the seam.
type Dialect struct {
	// Module is the driver's module path.
	Module string
	// SQLDriver is the name the driver is registered under in database/sql.
	SQLDriver string
	// PrepareCompanions creates what the driver's VFS would otherwise
	// create with the wrong mode (the -shm file).
	PrepareCompanions func(path string) error
	// DSN is the connection string for the file at path.
	DSN func(path string, s Settings, readOnly bool) string
	// Conn adapts a driver connection (from sql.Conn.Raw) to Conn.
	Conn func(driverConn any) (Conn, error)
	// Kind classifies a driver error.
	Kind func(error) Kind
	// ReadsReadOnlyShm reports that the driver reads a WAL file through a
	// -shm file it may not write.
	ReadsReadOnlyShm bool
	// AppDSN is the query string of the payments example's own database
	// in the driver's keys: WAL, a busy timeout, BEGIN IMMEDIATE and
	// synchronous FULL.
	AppDSN string
}

var pure atomic.Pointer[Dialect]

// Register makes d the driver a build without cgo uses.
func Register(d *Dialect) { pure.Store(d) }

// Pure is the registered driver, or nil when no program import registered
// one.
func Pure() *Dialect { return pure.Load() }

// Missing is the error of a build without cgo that has no driver.
const Missing = "this program was built without cgo and has no SQLite driver: " +
	`import _ "github.com/mcpledger/mcpledger/ledger/sqlite/purego" in it, or build it with CGO_ENABLED=1 and a C compiler`
