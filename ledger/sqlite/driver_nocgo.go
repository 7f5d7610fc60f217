//go:build !cgo

package sqlite

// Driver names the SQLite driver this build uses; none without cgo (see
// ErrNoDriver).
const Driver = "none (built with CGO_ENABLED=0)"

// driverName is never registered: Open stops at driverReady first.
const driverName = "mcpledger_sqlite3"

func driverReady() error { return ErrNoDriver }

func dsnFor(path string, o Options, readOnly bool) string { return mattnStyleDSN(path, o, readOnly) }

func rawConn(any) (drvConn, error) { return nil, ErrNoDriver }

func errorKind(error) errKind { return kindOther }
