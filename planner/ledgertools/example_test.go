package ledgertools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/planner/ledgertools"
)

// The ledger tools mounted in-process: the model asks what it already did
// in this session.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ledgertools")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clock := func() time.Time { return time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC) }
	st, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), &sqlite.Options{Now: clock})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// An earlier call of this session, as the client records it.
	id := ledger.ID{Layer: ledger.LayerClient, Tenant: "acme", Tool: "create_order", Key: "order-42"}
	cl, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "chat-1", Fingerprint: "f1", Owner: "agent"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := st.Transition(ctx, ledger.Transition{
		ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "agent", Fence: cl.Record.Fence, AddAttempts: 1,
		Result: json.RawMessage(`{"content":[{"type":"text","text":"order 42 created"}]}`),
	}); err != nil {
		log.Fatal(err)
	}

	server := ledgertools.NewServer(st, "acme", "chat-1", nil)
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: planner.ListTool, Arguments: map[string]any{}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// 1 call in this session:
	// 1. create_order, key order-42: SUCCEEDED, 1 attempt, first sent 2026-03-01T09:30:00Z, last changed 2026-03-01T09:30:00Z
}
