//go:build cgo

package payments

// The example's own database uses the ledger's driver of this build:
// mattn/go-sqlite3 with cgo.
import _ "github.com/mattn/go-sqlite3"

// dsnSettings: WAL, a busy timeout, write transactions that take the lock
// up front, and full fsyncs, in mattn's keys.
const dsnSettings = "_busy_timeout=10000&_journal_mode=WAL&_txlock=immediate&_synchronous=FULL"
