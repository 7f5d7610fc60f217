package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchServer returns a client session to a server with one write tool,
// guarded or not, over in-memory transports.
func benchServer(b *testing.B, guarded bool) *mcp.ClientSession {
	b.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "create_order"}, func(ctx context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		return nil, orderOut{OrderID: "ord-" + in.Item}, nil
	})
	if guarded {
		s.AddReceivingMiddleware(server.New(openStore(b), &server.Options{Logger: quietLogger()}).Middleware())
	}
	return connectTo(b, s, nil)
}

func benchCalls(b *testing.B, guarded bool, sameKey bool) {
	cs := benchServer(b, guarded)
	ctx := context.Background()
	args := map[string]any{"item": "book", "qty": 1}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		key := "bench-" + strconv.Itoa(i)
		if sameKey {
			key = "bench-replayed"
		}
		if _, err := callKey(ctx, cs, "create_order", key, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardedCall: every call is a new operation (claim, run, store).
func BenchmarkGuardedCall(b *testing.B) { benchCalls(b, true, false) }

// BenchmarkGuardedReplay: every call after the first is a duplicate.
func BenchmarkGuardedReplay(b *testing.B) { benchCalls(b, true, true) }

// BenchmarkUnguardedCall: the same server without the middleware.
func BenchmarkUnguardedCall(b *testing.B) { benchCalls(b, false, false) }

// BenchmarkGuardedReconcile: every call meets an UNKNOWN record of its
// key (its first call's handler failed after its effect, outside the
// timer) and gets the reconciler's finding in the same turn, as a replay;
// set beside BenchmarkGuardedReplay, it is what inline reconciliation
// costs over a plain replay.
func BenchmarkGuardedReconcile(b *testing.B) {
	var fail atomic.Bool
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "create_order"}, func(ctx context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		if fail.Load() {
			return nil, orderOut{}, errors.New("orders: commit lost: connection reset")
		}
		return nil, orderOut{OrderID: "ord-" + in.Item}, nil
	})
	found := json.RawMessage(`{"content":[{"type":"text","text":"ord-book"}],"structuredContent":{"order_id":"ord-book"}}`)
	s.AddReceivingMiddleware(server.New(openStore(b), &server.Options{Logger: quietLogger(),
		Reconcilers: map[string]server.Reconciler{"create_order": func(context.Context, server.ReconcileRequest) (ledger.Finding, error) {
			return ledger.Finding{Verdict: ledger.VerdictFound, Result: found, Evidence: "order ord-book has this key"}, nil
		}},
	}).Middleware())
	cs := connectTo(b, s, nil)
	ctx := context.Background()
	args := map[string]any{"item": "book", "qty": 1}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		key := "bench-unknown-" + strconv.Itoa(i)
		b.StopTimer()
		fail.Store(true)
		if _, err := callKey(ctx, cs, "create_order", key, args); err == nil {
			b.Fatalf("call %s whose handler failed: no error; want -31003", key)
		}
		fail.Store(false)
		b.StartTimer()
		res, err := callKey(ctx, cs, "create_order", key, args)
		if err != nil {
			b.Fatalf("call %s that meets its UNKNOWN record: %v; want the reconciler's finding", key, err)
		}
		if _, ok := res.Meta[wire.MetaReplay]; !ok {
			b.Fatalf("call %s: %+v; want the found result as a replay", key, res)
		}
	}
}
