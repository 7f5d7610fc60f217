package ledger_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/redact"
)

func Example() {
	// Two spellings of the same arguments: other key order, other number
	// spelling, a trace field that is not business data.
	a := json.RawMessage(`{"to":"bob","amount":100,"api_key":"s3cret"}`)
	b := json.RawMessage(`{"api_key":"s3cret","amount":1e2,"to":"bob","traceparent":"00-1-2-01"}`)
	fa, _ := args.Fingerprint(a)
	fb, _ := args.Fingerprint(b)
	fmt.Println("same operation:", fa == fb)

	// What a store keeps: the secret is gone, the fingerprint is of the
	// real arguments.
	stored, _ := redact.JSON(a)
	fmt.Println("stored:", string(stored))

	// Keys are checked before anything is stored.
	err := ledger.ValidateKey("order 42")
	fmt.Println(errors.Is(err, ledger.ErrInvalidKey), err)

	// A replayed chain derives the same key.
	fmt.Println(ledger.DeriveKey("chain-7", "pay", fa) == ledger.DeriveKey("chain-7", "pay", fb))

	// The state table refuses running a finished operation again.
	fmt.Println(ledger.CheckTransition(ledger.StateSucceeded, ledger.StateProcessing))
	// Output:
	// same operation: true
	// stored: {"amount":100,"api_key":"[REDACTED]","to":"bob"}
	// true ledger: invalid idempotency key: byte 0x20 at offset 5 of the key; allowed are [A-Za-z0-9._:~-]
	// true
	// ledger: illegal state transition: SUCCEEDED -> PROCESSING
}
