package ledger_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
)

// Typical tool arguments: a handful of fields, one nested object.
var benchArgs = json.RawMessage(`{"customer":"cus_123","amount":4200,"currency":"EUR",` +
	`"lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"note":"München order","api_key":"sk_live_x"}`)

func BenchmarkFingerprint(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ledger.Fingerprint(benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFingerprintExcluded pays for dropping a trace field first.
func BenchmarkFingerprintExcluded(b *testing.B) {
	args := json.RawMessage(`{"_meta":{"progressToken":1},"traceparent":"00-abc-def-01",` + string(benchArgs[1:]))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ledger.Fingerprint(args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRedact(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ledger.Redact(benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompact5MiB compacts a 5 MiB result to the default limit.
func BenchmarkCompact5MiB(b *testing.B) {
	res := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 5<<20) +
		`"},{"type":"resource_link","uri":"orders://42","name":"order 42"}],"structuredContent":{"id":42}}`)
	b.SetBytes(int64(len(res)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ledger.Compact(res, 0); err != nil {
			b.Fatal(err)
		}
	}
}
