package client_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// A write tool that counts how often it really runs.
func paymentsServer(runs *int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)
	type in struct {
		AmountCents int    `json:"amount_cents"`
		Payee       string `json:"payee"`
	}
	type out struct {
		PaymentID string `json:"payment_id"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "create_payment"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
		*runs++
		return nil, out{PaymentID: fmt.Sprintf("pay_%d", *runs)}, nil
	})
	return s
}

func Example() {
	ctx := context.Background()
	runs := 0
	serverT, clientT := mcp.NewInMemoryTransports()
	if _, err := paymentsServer(&runs).Connect(ctx, serverT, nil); err != nil {
		panic(err)
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "mcpledger-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	c := client.New(session, store, &client.Options{
		Tenant:    "acme",
		Session:   "run-1",
		Confirmer: confirm.Static{Answer: confirm.Answer{Decision: "approved", By: "example"}},
	})
	defer c.Close()

	// The chain entry: keys derive from it, so the same chain replayed after
	// a crash or a re-plan derives the same keys.
	ctx = client.WithChain(ctx, "order-1001")
	pay := &mcp.CallToolParams{Name: "create_payment", Arguments: map[string]any{"amount_cents": 1250, "payee": "ACME"}}
	for range 3 {
		o, err := c.Call(ctx, pay)
		if err != nil {
			panic(err)
		}
		fmt.Println(o.Result.StructuredContent, "replayed:", o.Replayed)
	}
	fmt.Println("executions:", runs)
	// Output:
	// map[payment_id:pay_1] replayed: false
	// map[payment_id:pay_1] replayed: true
	// map[payment_id:pay_1] replayed: true
	// executions: 1
}

// The middleware protects the session a runtime already has: code that
// only knows the session (a tool runner calling session.CallTool) is
// protected unchanged, and the ledger tools sit beside it.
func ExampleMiddleware() {
	ctx := context.Background()
	runs := 0
	serverT, clientT := mcp.NewInMemoryTransports()
	if _, err := paymentsServer(&runs).Connect(ctx, serverT, nil); err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "mcpledger-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	mw := client.NewMiddleware(store, &client.Options{
		Tenant:    "acme",
		Session:   "run-1",
		Confirmer: confirm.Static{Answer: confirm.Answer{Decision: "approved", By: "example"}},
	})
	defer mw.Close()
	mc := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
	mc.AddSendingMiddleware(mw.Wrap)
	session, err := mc.Connect(ctx, clientT, nil)
	if err != nil {
		panic(err)
	}
	defer session.Close()

	ctx = client.WithChain(ctx, "order-1001")
	pay := &mcp.CallToolParams{Name: "create_payment", Arguments: map[string]any{"amount_cents": 1250, "payee": "ACME"}}
	for range 2 {
		res, err := session.CallTool(ctx, pay) // the runtime's own call
		if err != nil {
			panic(err)
		}
		_, replayed := res.Meta[client.MetaReplay]
		fmt.Println(res.StructuredContent, "replayed:", replayed)
	}
	fmt.Println("executions:", runs)

	// The ledger tools, for the model, in the same runtime.
	ledgerSession, err := mw.ConnectLedger(ctx)
	if err != nil {
		panic(err)
	}
	defer ledgerSession.Close()
	res, err := ledgerSession.CallTool(ctx, &mcp.CallToolParams{Name: "ledger_list", Arguments: map[string]any{}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.StructuredContent.(map[string]any)["calls"].([]any)[0].(map[string]any)["state"])
	// Output:
	// map[payment_id:pay_1] replayed: false
	// map[payment_id:pay_1] replayed: true
	// executions: 1
	// SUCCEEDED
}
