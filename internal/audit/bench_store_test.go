package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/mcpledger/mcpledger/internal/audit"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// BenchmarkExportSQLite exports 2,000 SUCCEEDED records of the shape a
// proxy writes (small arguments and result) from a real SQLite ledger,
// the path agentctl ledger export takes; records/s is the figure the
// issue's goal of 50,000 a second is about.
func BenchmarkExportSQLite(b *testing.B) {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	const n = 2000
	ctx := context.Background()
	args := json.RawMessage(`{"amount":4200,"currency":"EUR","to":"acct-000123"}`)
	result := json.RawMessage(`{"content":[{"type":"text","text":"payment pay-000123 created"}],"isError":false}`)
	for i := range n {
		id := ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: fmt.Sprintf("k-%05d", i)}
		c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Session: fmt.Sprintf("s-%d", i/100), Fingerprint: "fp", Arguments: args, Owner: "o"})
		if err == nil {
			_, err = st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "o", Fence: c.Record.Fence, Result: result})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	cpu := cpuTime(b)
	for b.Loop() {
		got, err := audit.Export(ctx, st, io.Discard, audit.Options{Tenant: "acme"})
		if err != nil || got != n {
			b.Fatalf("Export = %d, %v; want %d", got, err, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
	if used := cpuTime(b) - cpu; used > 0 {
		b.ReportMetric(float64(n*b.N)/used.Seconds(), "records/cpu-s")
	}
}
