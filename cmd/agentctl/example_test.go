package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// A payment whose response was lost is UNKNOWN in the ledger. After checking
// the bank statement, a person settles it; every later replay of the
// operation returns what they decided.
func Example() {
	dir, err := os.MkdirTemp("", "agentctl-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ledger.db")
	if err := lostPayment(path); err != nil {
		fmt.Println(err)
		return
	}

	env := map[string]string{"MCPLEDGER_LEDGER": path, "USER": "alice"}
	agentctl := func(args ...string) {
		code := run(context.Background(), args, stdio{Out: os.Stdout, Err: os.Stdout}, func(k string) string { return env[k] })
		fmt.Println("exit", code)
	}
	agentctl("ledger", "list", "--state", "unknown", "--json")
	agentctl("ledger", "reconcile", "order-42", "--as", "succeeded", "--note", "on the bank statement")
	agentctl("ledger", "reconcile", "order-42", "--as", "failed")
	// Output:
	// {"tenant":"default","layer":"client","tool":"create_payment","key":"order-42","session":"s1","fingerprint":"f1","arguments":{"amount_cents":1250},"state":"UNKNOWN","attempts":1,"errorKind":"lost_response","owner":"worker-1","fence":1,"reusePolicy":"reexecute","createdAt":"2030-01-02T03:04:05Z","updatedAt":"2030-01-02T03:04:05Z","expiresAt":"2030-01-03T03:04:05Z"}
	// exit 0
	// create_payment order-42: UNKNOWN -> SUCCEEDED
	// exit 0
	// agentctl: record order-42 (create_payment) is SUCCEEDED; only UNKNOWN records are reconciled
	// exit 2
}

// lostPayment records a payment that was sent and never answered.
func lostPayment(path string) error {
	ctx := context.Background()
	at := func() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }
	st, err := sqlite.Open(ctx, path, &sqlite.Options{Now: at})
	if err != nil {
		return err
	}
	defer st.Close()
	id := ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-42"}
	cl, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "s1", Fingerprint: "f1",
		Arguments: json.RawMessage(`{"amount_cents":1250}`), Owner: "worker-1"})
	if err != nil {
		return err
	}
	_, err = st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown,
		Owner: "worker-1", Fence: cl.Record.Fence, ErrorKind: "lost_response", AddAttempts: 1})
	return err
}
