package client_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
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

// BenchmarkStoreClaimComplete is the ledger's own part of a new operation
// (claim, then SUCCEEDED with a small result) on the same store settings as
// BenchmarkCallToolLedger: what the wrapper adds beyond it and the bare call
// is the wrapper's own cost.
func BenchmarkStoreClaimComplete(b *testing.B) {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), &sqlite.Options{Synchronous: sqlite.SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	result := []byte(`{"content":[{"type":"text","text":"ok"}]}`)
	b.ResetTimer()
	for i := range b.N {
		id := ledger.ID{Tenant: "default", Tool: "write", Key: fmt.Sprintf("k%d", i)}
		if _, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "bench"}); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "bench", Result: result}); err != nil {
			b.Fatal(err)
		}
	}
}
