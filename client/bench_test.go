package client_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcptest"
)

// BenchmarkCallToolBare is go-sdk's in-memory CallTool with no wrapper: the
// floor the wrapper is measured against.
func BenchmarkCallToolBare(b *testing.B) {
	srv := mcptest.New(nil)
	defer srv.Close()
	cs := srv.ConnectInMemory(context.Background(), b, nil)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		p := write(fmt.Sprint(i), 1)
		if _, err := cs.CallTool(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

func benchClient(b *testing.B) *client.Client {
	srv := mcptest.New(nil)
	b.Cleanup(func() { srv.Close() })
	cs := srv.ConnectInMemory(context.Background(), b, nil)
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), &sqlite.Options{Synchronous: sqlite.SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return client.New(cs, st, &client.Options{Policy: allow()})
}

// BenchmarkCallToolLedger is a new operation through the wrapper each time:
// claim, send, complete (SQLite in NORMAL mode).
func BenchmarkCallToolLedger(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if _, err := c.CallTool(client.WithKey(ctx, fmt.Sprintf("k%d", i)), write(fmt.Sprint(i), 1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallToolReplay is a duplicate answered from the ledger; it never
// reaches the server.
func BenchmarkCallToolReplay(b *testing.B) {
	c := benchClient(b)
	ctx := client.WithKey(context.Background(), "replayed")
	if _, err := c.CallTool(ctx, write("r", 1)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		o, err := c.Call(ctx, write("r", 1))
		if err != nil || !o.Replayed {
			b.Fatal(err)
		}
	}
}
