module github.com/mcpledger/mcpledger/ledger/sqlite/purego

// go 1.26: github.com/ncruces/go-sqlite3 v0.37.0 needs it.
go 1.26.0

require (
	github.com/mcpledger/mcpledger v0.0.0-00010101000000-000000000000
	github.com/ncruces/go-sqlite3 v0.37.0
)

require (
	github.com/gowebpki/jcs v1.0.2 // indirect
	github.com/mattn/go-sqlite3 v1.14.53 // indirect
	github.com/ncruces/go-sqlite3-wasm/v6 v6.5.35401 // indirect
	github.com/ncruces/julianday v1.0.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/mcpledger/mcpledger => ../../..
