package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func TestConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T, now func() time.Time) ledger.Store {
		return openStore(t, &sqlite.Options{Now: now})
	})
}

// openStore opens a fresh store in t's temporary folder and closes it when
// t ends.
func openStore(t testing.TB, opts *sqlite.Options) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), opts)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return st
}
