package payments_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Two create_payment calls with one key make one payment.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "payments-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	app, err := payments.Open(ctx, payments.Config{DB: filepath.Join(dir, "payments.db"), Logger: quiet()})
	if err != nil {
		log.Fatal(err)
	}
	defer app.Close()

	ct, st := mcp.NewInMemoryTransports()
	if _, err := app.Server().Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for range 2 {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name:      "create_payment",
			Meta:      mcp.Meta{wire.MetaKey: "invoice-2024-001"},
			Arguments: map[string]any{"amount_cents": 4200, "currency": "EUR", "payee": "acme"},
		}); err != nil {
			log.Fatal(err)
		}
	}
	n, err := app.Payments(ctx, "invoice-2024-001")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("payments made:", n)
	// Output: payments made: 1
}
