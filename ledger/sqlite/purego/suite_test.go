package purego_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	_ "github.com/mcpledger/mcpledger/ledger/sqlite/purego"
)

// pureGo reports whether this test binary's ledger runs on the pure-Go
// driver: only a build without cgo uses it (CGO_ENABLED=0 go test).
func pureGo(t *testing.T) {
	t.Helper()
	if sqlite.Driver != "github.com/ncruces/go-sqlite3" {
		t.Skipf("this build's ledger uses %s; run with CGO_ENABLED=0 to test the pure-Go driver", sqlite.Driver)
	}
}

// TestConformance runs the store's conformance suite on the pure-Go driver.
func TestConformance(t *testing.T) {
	pureGo(t)
	ledgertest.Run(t, func(t *testing.T, now func() time.Time) ledger.Store {
		return openPath(t, filepath.Join(t.TempDir(), "ledger.db"), &sqlite.Options{Now: now})
	})
}

// TestReadOnlyOpen reads a ledger the pure-Go driver wrote, through a
// ReadOnly store: the driver's VFS needs a -shm file it can write.
func TestReadOnlyOpen(t *testing.T) {
	pureGo(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st := openPath(t, path, nil)
	id := ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: "k1"}
	lc := &ledger.Lifecycle{Store: st, Owner: "o"}
	if _, err := lc.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "s1", Fingerprint: "fp", Owner: "o"}); err != nil {
		t.Fatal(err)
	}
	ro := openPath(t, path, &sqlite.Options{ReadOnly: true})
	rec, err := ro.Get(ctx, id)
	if err != nil || rec.State != ledger.StateProcessing {
		t.Fatalf("read-only Get = %+v, %v; want the PROCESSING claim", rec, err)
	}
}

// openPath opens the ledger at path and closes it when t ends.
func openPath(t testing.TB, path string, opts *sqlite.Options) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return st
}
