//go:build cgo

package payments

// The example's own database uses the ledger's driver of this build:
// mattn/go-sqlite3 with cgo.
import _ "github.com/mattn/go-sqlite3"

// appDriver is the database/sql driver of the example's own database and
// the settings of its connection string: WAL, a busy timeout, write
// transactions that take the lock up front, and full fsyncs, in mattn's
// keys.
func appDriver() (name, settings string, err error) {
	return "sqlite3", "_busy_timeout=10000&_journal_mode=WAL&_txlock=immediate&_synchronous=FULL", nil
}
