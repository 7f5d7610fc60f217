package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// BenchmarkDueUnknownTools lists the due UNKNOWN records of one tool among
// many more of another tool that are due first: with DueQuery.Tools one
// index range of that tool (its cost follows the list's size), without it
// the list is all of the other tool's.
func BenchmarkDueUnknownTools(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "ledger.db"), &sqlite.Options{Durability: ledger.WriteBehind})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	strand := func(tool, key string) {
		req := claimReq(key, "bench")
		req.ID.Tool = tool
		c, err := st.Claim(ctx, req)
		if err != nil || !c.Won {
			b.Fatalf("Claim(%q) = %v", key, err)
		}
		if _, err := st.Transition(ctx, ledger.Transition{ID: req.ID, From: ledger.StateProcessing, To: ledger.StateUnknown,
			Owner: "bench", Fence: c.Record.Fence, ErrorKind: "ambiguous"}); err != nil {
			b.Fatalf("Transition(%q) = %v", key, err)
		}
	}
	for i := range 5000 {
		strand("send_mail", fmt.Sprintf("mail-%d", i))
	}
	for i := range 10 {
		strand("create_payment", fmt.Sprintf("pay-%d", i))
	}
	for _, bc := range []struct {
		name  string
		tools []string
	}{{"tools=create_payment", []string{"create_payment"}}, {"every tool", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			q := ledger.DueQuery{AllTenants: true, Tools: bc.tools, Limit: 10}
			var pay int
			for b.Loop() {
				recs, err := ledger.DueUnknown(ctx, st, q)
				if err != nil {
					b.Fatal(err)
				}
				pay = 0
				for _, r := range recs {
					if r.Tool == "create_payment" {
						pay++
					}
				}
			}
			b.ReportMetric(float64(pay), "payments-listed")
		})
	}
}
