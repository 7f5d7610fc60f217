package bulk_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/scripts/bigledger/bulk"
)

// The copies read back through the store as the records Shape says, and
// purge removes exactly the expired settled ones.
func TestCopiesAreTheShapesRecords(t *testing.T) {
	const n = 2000
	shape := bulk.Shape{UnknownEvery: 100, Expired: 0.1, Chunk: 700}
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			ctx := context.Background()
			var st ledger.Store
			if store == "sqlite" {
				path := filepath.Join(t.TempDir(), "ledger.db")
				if err := bulk.SQLite(ctx, path, n, shape); err != nil {
					t.Fatal(err)
				}
				s, err := sqlite.Open(ctx, path, nil)
				if err != nil {
					t.Fatal(err)
				}
				st = s
			} else {
				url := pgtest.Schema(t)
				if err := bulk.Postgres(ctx, url, n, shape); err != nil {
					t.Fatal(err)
				}
				s, err := postgres.Open(ctx, url, nil)
				if err != nil {
					t.Fatal(err)
				}
				st = s
			}
			t.Cleanup(func() { _ = st.Close() })
			wantExpired := 0
			for _, i := range []int{0, 1, 2, 3, 50, 150, 199, 1000, 1050, n - 1} {
				id := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: shape.Tool(i), Key: bulk.Key(i)}
				rec, err := st.Get(ctx, id)
				if err != nil {
					t.Fatalf("record %d (%v): %v", i, id, err)
				}
				want := ledger.StateSucceeded
				if shape.Unknown(i) {
					want = ledger.StateUnknown
				}
				if rec.State != want || rec.Session != bulk.Session(i) || rec.Attempts != 1 {
					t.Errorf("record %d: %s, session %q, %d attempts; want %s, session %q, 1 attempt", i, rec.State, rec.Session, rec.Attempts, want, bulk.Session(i))
				}
				expired := !rec.ExpiresAt.After(time.Now())
				if expired != (i < shape.Expiring(n)) {
					t.Errorf("record %d expires at %s: expired %t, want %t", i, rec.ExpiresAt, expired, !expired)
				}
			}
			for i := range shape.Expiring(n) {
				if !shape.Unknown(i) {
					wantExpired++
				}
			}
			got, err := st.Purge(ctx, ledger.PurgeRequest{ExpiredBy: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if got != wantExpired {
				t.Errorf("purge removed %d records, want the %d expired settled ones", got, wantExpired)
			}
		})
	}
}
