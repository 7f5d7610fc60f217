package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
)

// A CLI picks the Store by the form of its --ledger value.
func ExampleIsURL() {
	for _, v := range []string{"postgres://ledger@db:5432/app", "postgresql://db/app?search_path=ledger", "/var/lib/mcpledger/ledger.db"} {
		fmt.Println(postgres.IsURL(v), v)
	}
	// Output:
	// true postgres://ledger@db:5432/app
	// true postgresql://db/app?search_path=ledger
	// false /var/lib/mcpledger/ledger.db
}

// Two replicas of a server open the same database; whichever claims a key
// first executes, the other replays its result.
func ExampleOpen() {
	ctx := context.Background()
	st, err := postgres.Open(ctx, os.Getenv("LEDGER_URL"), &postgres.Options{MaxConns: 8})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	id := ledger.ID{Tenant: "acme", Tool: "create_payment", Key: "order-42"}
	c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "9f86d081884c7d65", Owner: "replica-1"})
	if err != nil {
		log.Fatal(err)
	}
	rec := c.Record
	if c.Won {
		// ... make the payment, then record its result for every repeat.
		rec, err = st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: "replica-1", Fence: rec.Fence, Result: json.RawMessage(`{"content":[{"type":"text","text":"pay_1"}]}`), AddAttempts: 1})
	} else if rec.State.Waiting() {
		rec, err = st.Wait(ctx, id) // woken by the other replica's notification
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.State, string(rec.Result))
}
