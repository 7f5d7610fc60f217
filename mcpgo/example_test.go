package mcpgo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcpgo"
	"github.com/mcpledger/mcpledger/wire"
)

// An mcp-go server guarded by mcpgo.Guard, called by an mcp-go client
// through mcpgo.Client: the second call with the key is answered from the
// ledger, with the replay marker, and the tool runs once.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "mcpgo-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// The server and the agent keep ledgers of their own.
	serverLedger, err := sqlite.Open(ctx, filepath.Join(dir, "server.db"), nil)
	if err != nil {
		panic(err)
	}
	defer serverLedger.Close()
	agentLedger, err := sqlite.Open(ctx, filepath.Join(dir, "agent.db"), nil)
	if err != nil {
		panic(err)
	}
	defer agentLedger.Close()

	// The server: the Guard's options install its middleware and
	// capability.
	runs := 0
	g := mcpgo.NewGuard(serverLedger, nil)
	s := server.NewMCPServer("shop", "v1", g.ServerOptions()...)
	// mcp-go marks a tool destructive unless told otherwise, and the
	// default policy asks about destructive tools.
	s.AddTool(mcp.NewTool("create_order", mcp.WithString("item"), mcp.WithDestructiveHintAnnotation(false)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs++
			key, _ := mcpgo.KeyFromContext(ctx) // pass it on to the downstream API
			return mcp.NewToolResultText(fmt.Sprintf("ordered %s under %s", req.GetString("item", ""), key)), nil
		})

	// The client: an mcp-go client on a wrapped transport.
	mc := client.NewClient(mcpgo.Transport(transport.NewInProcessTransport(s)))
	if err := mc.Start(ctx); err != nil {
		panic(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "agent", Version: "v1"}
	if _, err := mc.Initialize(ctx, init); err != nil {
		panic(err)
	}
	c, err := mcpgo.New(mc, agentLedger, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	req := mcp.CallToolRequest{}
	req.Params.Name = "create_order"
	req.Params.Arguments = map[string]any{"item": "book"}
	ctx = caller.WithKey(ctx, "order-1042")
	for range 2 {
		o, err := c.Call(ctx, req)
		if err != nil {
			panic(err)
		}
		marked := false
		if o.Result.Meta != nil {
			_, marked = o.Result.Meta.AdditionalFields[wire.MetaReplay]
		}
		fmt.Printf("%s (replayed %v, marker %v)\n", mcp.GetTextFromContent(o.Result.Content[0]), o.Replayed, marked)
	}
	fmt.Println("runs:", runs)
	// Output:
	// ordered book under order-1042 (replayed false, marker false)
	// ordered book under order-1042 (replayed true, marker true)
	// runs: 1
}
