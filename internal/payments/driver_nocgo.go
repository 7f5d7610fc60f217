//go:build !cgo

package payments

// Without cgo the example's database uses the pure-Go driver the ledger
// uses then (ncruces/go-sqlite3), registered as "sqlite3" as mattn's is.
import _ "github.com/ncruces/go-sqlite3/driver"

// dsnSettings: the settings of driver_cgo.go in ncruces's keys.
const dsnSettings = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate&_pragma=synchronous(FULL)"
