package peer_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// ledgerContender is the mcpledger client over st, the operation's key as
// its idempotency key, as client's benchmarks make it.
func ledgerContender(b *testing.B, st ledger.Store, opts client.Options) *contender {
	srv, cs := newServer(b)
	opts.Policy = allow()
	c := client.New(cs, st, &opts)
	return &contender{srv: srv, call: func(ctx context.Context, key, id string) (*mcp.CallToolResult, bool, error) {
		o, err := c.Call(client.WithKey(ctx, key), write(id, 1))
		if err != nil {
			return nil, false, err
		}
		return o.Result, o.Replayed, nil
	}}
}

func openSQLite(b *testing.B) *sqlite.Store {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkLedgerFull is the client on the default SQLite ledger
// (synchronous=FULL, every transition on disk before it returns): client's
// BenchmarkCallToolDurable.
func BenchmarkLedgerFull(b *testing.B) {
	run(b, ledgerContender(b, openSQLite(b), client.Options{}))
}

// BenchmarkLedgerWriteBehind is BenchmarkLedgerFull with outcomes written
// behind (the claim durable before the call, the completion group
// committed): client's BenchmarkCallToolDurableWriteBehind.
func BenchmarkLedgerWriteBehind(b *testing.B) {
	run(b, ledgerContender(b, openSQLite(b), client.Options{Durability: ledger.WriteBehind}))
}

// BenchmarkLedgerPostgres is the client on a PostgreSQL ledger in a schema
// of its own, with the store's default pool and durability.
func BenchmarkLedgerPostgres(b *testing.B) {
	st, err := postgres.Open(context.Background(), pgtest.Schema(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	run(b, ledgerContender(b, st, client.Options{}))
}
