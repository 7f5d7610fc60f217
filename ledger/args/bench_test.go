package args_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/args"
)

// Typical tool arguments: a handful of fields, one nested object.
var benchArgs = json.RawMessage(`{"customer":"cus_123","amount":4200,"currency":"EUR",` +
	`"lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"note":"München order","api_key":"sk_live_x"}`)

func BenchmarkFingerprint(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := args.Fingerprint(benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFingerprintExcluded pays for dropping a trace field first.
func BenchmarkFingerprintExcluded(b *testing.B) {
	doc := json.RawMessage(`{"_meta":{"progressToken":1},"traceparent":"00-abc-def-01",` + string(benchArgs[1:]))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := args.Fingerprint(doc); err != nil {
			b.Fatal(err)
		}
	}
}
