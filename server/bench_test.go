package server_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/mcpledger/mcpledger/server"
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
