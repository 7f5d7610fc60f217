package proxy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/internal/proxy"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// A host talks to a plain MCP server through the proxy: the model's
// repeated call is answered from the ledger, not run again.
func Example() {
	ctx := context.Background()

	// The upstream: a server that knows nothing about keys.
	runs := 0
	up := mcp.NewServer(&mcp.Implementation{Name: "mail", Version: "v1"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "file_ticket"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Title string `json:"title"`
	}) (*mcp.CallToolResult, any, error) {
		runs++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("ticket T-%d: %s", runs, in.Title)}}}, nil, nil
	})

	dir, err := os.MkdirTemp("", "proxy-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	p, err := proxy.New(ctx, &proxy.Options{
		Transport: func(ctx context.Context) (mcp.Transport, error) {
			st, ct := mcp.NewInMemoryTransports()
			_, err := up.Connect(ctx, st, nil)
			return ct, err
		},
		Store:   store,
		Session: "example",
	})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	// The host: any MCP client.
	st, ct := mcp.NewInMemoryTransports()
	if _, err := p.Server().Connect(ctx, st, nil); err != nil {
		panic(err)
	}
	host, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer host.Close()

	for range 2 {
		res, err := host.CallTool(ctx, &mcp.CallToolParams{Name: "file_ticket", Arguments: map[string]any{"title": "printer on fire"}})
		if err != nil {
			panic(err)
		}
		_, replayed := res.Meta["io.github.mcpledger/replay"]
		fmt.Printf("%s (replayed: %v)\n", res.Content[0].(*mcp.TextContent).Text, replayed)
	}
	fmt.Println("executions:", runs)
	// Output:
	// ticket T-1: printer on fire (replayed: false)
	// ticket T-1: printer on fire (replayed: true)
	// executions: 1
}
