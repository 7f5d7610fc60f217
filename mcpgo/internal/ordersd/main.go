// Command ordersd serves package orders' create_order over stdio, for the
// child-process tests of package mcpgo:
//
//	ordersd -sdk mcpgo|gosdk [-ledger PATH] -runs FILE [-drop FILE]
//
// With -ledger the server is guarded (the idempotency capability and the
// -3100x errors); without it, it is not. Each execution appends a line to
// -runs. While the file -drop exists, the process exits just before it
// writes a create_order result, after the call ran.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	mgserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcpgo/internal/orders"
)

func main() {
	sdk := flag.String("sdk", "mcpgo", "the server's SDK: mcpgo or gosdk")
	path := flag.String("ledger", "", "the server's SQLite ledger (none: unguarded)")
	runs := flag.String("runs", "", "the file that counts executions")
	drop := flag.String("drop", "", "while this file exists, exit before writing a create_order result")
	flag.Parse()
	if err := run(*sdk, *path, *runs, *drop); err != nil {
		fmt.Fprintln(os.Stderr, "ordersd:", err)
		os.Exit(1)
	}
}

func run(sdk, path, runs, drop string) (err error) {
	ctx := context.Background()
	var store ledger.Store
	if path != "" {
		st, oerr := sqlite.Open(ctx, path, nil)
		if oerr != nil {
			return oerr
		}
		defer func() { err = errors.Join(err, st.Close()) }()
		store = st
	}
	c := &orders.Counter{File: runs}
	out := &orders.DropWriter{W: os.Stdout, Drop: drop}
	switch sdk {
	case "gosdk":
		s := orders.GoSDK(store, c)
		return s.Run(ctx, &gomcp.IOTransport{Reader: os.Stdin, Writer: out})
	case "mcpgo":
		s, g := orders.MCPGo(store, c)
		if g == nil {
			return mgserver.NewStdioServer(s).Listen(ctx, os.Stdin, out)
		}
		return g.ServeStdio(ctx, s, os.Stdin, out)
	}
	return fmt.Errorf("-sdk %q: want mcpgo or gosdk", sdk)
}
