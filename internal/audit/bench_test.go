package audit_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/mcpledger/mcpledger/internal/audit"
)

// 1,000 records a round, as one ledger page.
func BenchmarkExport(b *testing.B) {
	st := &pages{records: records(1000), size: 1000}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := audit.Export(context.Background(), st, io.Discard, audit.Options{Tenant: "acme"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	var file bytes.Buffer
	if _, err := audit.Export(context.Background(), &pages{records: records(1000), size: 1000}, &file, audit.Options{Tenant: "acme"}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(file.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := audit.Verify(bytes.NewReader(file.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}
