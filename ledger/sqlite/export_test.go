package sqlite

import (
	"database/sql"

	"github.com/mcpledger/mcpledger/ledger"
)

// SetWaitHook makes Wait call f each time it blocks. Set it before use.
func SetWaitHook(s *Store, f func(ledger.ID)) { s.waitHook = f }

// Commits returns how many write transactions s has committed.
func Commits(s *Store) int64 { return s.commits.Load() }

// DriverName is the database/sql name of the build's driver (see Driver),
// for tests that write a file by hand.
var DriverName = sqlDriver()

// CountUnknownQuery is the statement behind Store.CountUnknown.
const CountUnknownQuery = countUnknown

// Unsynced reports whether s has commits not yet fsynced (write-behind).
func Unsynced(s *Store) bool { return s.unsynced.Load() }

// DriverCgo is the Driver of a cgo build.
const DriverCgo = "github.com/mattn/go-sqlite3"

// ReadStats are the read connection pool's statistics.
func ReadStats(s *Store) sql.DBStats { return s.rdb.Stats() }
