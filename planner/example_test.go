package planner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/planner"
)

// What ledger_list answers the model about its session (package
// planner/ledgertools serves it over MCP).
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "planner")
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

	text, _, err := (&planner.Tools{Store: st}).List(ctx, planner.Scope{Tenant: "acme", Session: "chat-1"}, planner.ListInput{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
	// Output:
	// 1 call in this session:
	// 1. create_order, key order-42: SUCCEEDED, 1 attempt, first sent 2026-03-01T09:30:00Z, last changed 2026-03-01T09:30:00Z
}

// A model lost the answer of a call and plans it again, with the same
// arguments spelled differently: the guard finds the first call.
func ExampleGuard_Check() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "planner")
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

	first, _ := args.Fingerprint(json.RawMessage(`{"to":"bob","subject":"Invoice"}`))
	id := ledger.ID{Layer: ledger.LayerClient, Tenant: "acme", Tool: "send_mail", Key: "mail-7"}
	if _, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "chat-1", Fingerprint: first, Owner: "agent"}); err != nil {
		log.Fatal(err)
	}

	again, _ := args.Fingerprint(json.RawMessage(`{"subject": "Invoice", "to": "bob"}`))
	g := &planner.Guard{Store: st, Now: clock}
	v, err := g.Check(ctx, planner.Query{Layer: ledger.LayerClient, Tenant: "acme", Session: "chat-1", Tool: "send_mail", Fingerprint: again})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Decision)
	fmt.Println(planner.Explain(v))
	// Output:
	// in_flight
	// The call of send_mail with these arguments (key mail-7) is still in progress (sent 2026-03-01T09:30:00Z). Do not issue it again; its outcome will be recorded. To check on it, call ledger_status with key "mail-7".
}
