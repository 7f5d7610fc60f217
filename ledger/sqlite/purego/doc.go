// Package purego brings the pure-Go SQLite driver (ncruces/go-sqlite3,
// SQLite compiled to Go) to the embedded ledger, for programs built without
// cgo (CGO_ENABLED=0, Windows and cross builds without a C compiler):
//
//	import _ "github.com/mcpledger/mcpledger/ledger/sqlite/purego"
//
// A build with cgo keeps mattn/go-sqlite3: there the package is empty, as
// ncruces/go-sqlite3 registers the name "sqlite3" that mattn/go-sqlite3
// registers too. The file format and schema are the same either way, so a
// ledger moves between the two builds.
//
// It is a module of its own so that a program that builds with cgo does not
// carry the driver, nor the Go release it requires (ncruces/go-sqlite3
// needs Go 1.26), in its module graph.
package purego
