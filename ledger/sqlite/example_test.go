package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// The first caller of a key executes the call; a repeat gets the stored
// result instead of a second side effect.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ledger")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	st, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	doc := json.RawMessage(`{"amount": 42, "currency": "EUR"}`)
	fp, err := args.Fingerprint(doc)
	if err != nil {
		log.Fatal(err)
	}
	req := ledger.ClaimRequest{
		ID:          ledger.ID{Tenant: "acme", Tool: "create_payment", Key: "order-42"},
		Fingerprint: fp,
		Arguments:   doc,
		Owner:       "worker-1",
	}

	first, err := st.Claim(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first call executes:", first.Won)
	if _, err := st.Transition(ctx, ledger.Transition{
		ID: req.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: "worker-1", Fence: first.Record.Fence, Result: json.RawMessage(`{"content":[{"type":"text","text":"pay_1"}]}`),
		AddAttempts: 1,
	}); err != nil {
		log.Fatal(err)
	}

	req.Owner = "worker-2"
	again, err := st.Claim(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("repeat executes:", again.Won)
	fmt.Println("repeat sees:", again.Record.State, string(again.Record.Result))
	// Output:
	// first call executes: true
	// repeat executes: false
	// repeat sees: SUCCEEDED {"content":[{"type":"text","text":"pay_1"}]}
}
