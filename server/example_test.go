package server_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A create_payment tool behind the guard runs once per key, however often
// the client repeats the call.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "server-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	s := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)
	charges := 0
	type payment struct {
		AmountCents int `json:"amount_cents"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "create_payment"}, func(ctx context.Context, _ *mcp.CallToolRequest, p payment) (*mcp.CallToolResult, any, error) {
		charges++
		key, _ := server.KeyFromContext(ctx) // pass it on to the payment provider
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pay_" + key}}}, nil, nil
	})
	s.AddReceivingMiddleware(server.New(st, nil).Middleware())

	ct, stt := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, stt, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	for range 3 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name:      "create_payment",
			Meta:      mcp.Meta{wire.MetaKey: "order-42"}, // a fresh map per call
			Arguments: map[string]any{"amount_cents": 1250},
		})
		if err != nil {
			log.Fatal(err)
		}
		_, replayed := res.Meta[wire.MetaReplay]
		fmt.Println(res.Content[0].(*mcp.TextContent).Text, "replayed:", replayed)
	}
	fmt.Println("charges:", charges)
	// Output:
	// pay_order-42 replayed: false
	// pay_order-42 replayed: true
	// pay_order-42 replayed: true
	// charges: 1
}
