package main

// A build without cgo (CGO_ENABLED=0, a machine without a C compiler, a
// cross build) keeps a working ledger: the pure-Go SQLite driver. A build
// with cgo ignores it and uses mattn/go-sqlite3.
import _ "github.com/mcpledger/mcpledger/ledger/sqlite/purego"
