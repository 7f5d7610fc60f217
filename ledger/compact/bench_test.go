package compact_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/compact"
)

// BenchmarkCompact5MiB compacts a 5 MiB result to the default limit.
func BenchmarkCompact5MiB(b *testing.B) {
	res := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 5<<20) +
		`"},{"type":"resource_link","uri":"orders://42","name":"order 42"}],"structuredContent":{"id":42}}`)
	b.SetBytes(int64(len(res)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := compact.Result(res, 0); err != nil {
			b.Fatal(err)
		}
	}
}
