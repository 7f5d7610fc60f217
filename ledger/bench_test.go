package ledger_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/redact"
)

// Typical tool arguments: a handful of fields, one nested object, a secret.
var benchArgs = json.RawMessage(`{"customer":"cus_123","amount":4200,"currency":"EUR",` +
	`"lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"note":"München order","api_key":"sk_live_x"}`)

func BenchmarkRedact(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := redact.JSON(benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}
