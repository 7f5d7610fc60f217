package planner_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/planner"
)

// BenchmarkGuardCheck is the guard's cost on every call without a key: one
// indexed read in a session that already holds 1,000 calls.
func BenchmarkGuardCheck(b *testing.B) {
	for _, match := range []bool{false, true} {
		b.Run(fmt.Sprintf("match=%v", match), func(b *testing.B) {
			c := newClock()
			// The guard only reads; the session's 1,000 calls are
			// written without an fsync each, so that setting them up
			// costs little beside one run of the loop (-benchtime 1x).
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"),
				&sqlite.Options{Now: c.Now, Synchronous: sqlite.SyncNormal})
			if err != nil {
				b.Fatalf("sqlite.Open = %v", err)
			}
			b.Cleanup(func() {
				if err := st.Close(); err != nil {
					b.Errorf("Close = %v", err)
				}
			})
			ctx := context.Background()
			for i := range 1000 {
				id := ledger.ID{Layer: ledger.LayerClient, Tenant: "acme", Tool: "create_order", Key: fmt.Sprintf("k-%d", i)}
				if _, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "s1", Fingerprint: fmt.Sprintf("fp-%d", i), Owner: "o"}); err != nil {
					b.Fatal(err)
				}
			}
			fp := "fp-none"
			if match {
				fp = "fp-500"
			}
			c.Advance(time.Minute)
			g := &planner.Guard{Store: st, Now: c.Now}
			q := planner.Query{Layer: ledger.LayerClient, Tenant: "acme", Session: "s1", Tool: "create_order", Fingerprint: fp}
			b.ReportAllocs()
			for b.Loop() {
				v, err := g.Check(ctx, q)
				if err != nil || (v.Decision == planner.InFlight) != match {
					b.Fatalf("Check = %v, %v", v.Decision, err)
				}
			}
		})
	}
}
