package args_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger/args"
)

func ExampleFingerprint() {
	// Other key order, other number spelling and a trace field: the same
	// operation.
	a, _ := args.Fingerprint(json.RawMessage(`{"to":"bob","amount":100}`))
	b, _ := args.Fingerprint(json.RawMessage(`{"amount":1e2,"to":"bob","traceparent":"00-1-2-01"}`))
	fmt.Println(a == b)
	// Output: true
}

func ExampleDecode() {
	_, err := args.Decode([]byte(`{"amount_cents":1,"amount_cents":5000}`))
	fmt.Println(errors.Is(err, args.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// args: invalid arguments: the member "amount_cents" is given twice in one object; send each name once
}
