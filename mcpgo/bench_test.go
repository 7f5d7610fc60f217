package mcpgo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/mcpgo"
)

// BenchmarkCall compares a bare mcp-go call with the same call through
// mcpgo.Client (a new operation: claim, lease, send, settle in SQLite)
// and a repeat it answers from the ledger, against an in-process mcp-go
// server, so the difference is the ledger's.
//
//	go test -run '^$' -bench BenchmarkCall -benchmem ./mcpgo/
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	s := server.NewMCPServer("bench", "v1")
	s.AddTool(mcp.NewTool("create_order", mcp.WithString("item"), mcp.WithDestructiveHintAnnotation(false)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ordered " + req.GetString("item", "")), nil
		})
	mc := client.NewClient(mcpgo.Transport(transport.NewInProcessTransport(s)))
	if err := mc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "v1"}
	if _, err := mc.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	c, err := mcpgo.New(mc, openStore(b, "agent.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	req := func() mcp.CallToolRequest {
		r := mcp.CallToolRequest{}
		r.Params.Name = "create_order"
		r.Params.Arguments = map[string]any{"item": "book", "qty": 1}
		return r
	}
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			if _, err := mc.CallTool(ctx, req()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ledger", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := c.CallTool(caller.WithKey(ctx, fmt.Sprintf("bench-%d", i)), req()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		kctx := caller.WithKey(ctx, "bench-replay")
		if _, err := c.CallTool(kctx, req()); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := c.CallTool(kctx, req()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
