package redact_test

import (
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/mcpledger/mcpledger/ledger/redact"
)

func ExampleText() {
	fmt.Println(redact.Text("password=hunter2 db=postgres://u:pw@h/db Authorization: Bearer abc123def456"))
	fmt.Println(redact.Text("deploy with ghp_16C7e42F292c6912E7710c838347Ae178B4a, then tell ann"))
	// Output:
	// password=[REDACTED] db=postgres://u:[REDACTED]@h/db Authorization: [REDACTED]
	// deploy with [REDACTED], then tell ann
}

func ExampleRedactor() {
	// A tool's own secret names and value shapes, on top of the built-in ones.
	r := &redact.Redactor{
		Names:    []string{"card_number"},
		Patterns: []*regexp.Regexp{regexp.MustCompile(`\bacct-(\d{6})\b`)},
	}
	out, err := r.JSON(json.RawMessage(`{"card_number":"4242","memo":"to acct-123456","pwd":"x","to":"bob"}`))
	fmt.Println(string(out), err)
	// Output:
	// {"card_number":"[REDACTED]","memo":"to acct-[REDACTED]","pwd":"[REDACTED]","to":"bob"} <nil>
}
