package aesgcm_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/codec"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// An encrypted Store is still a Store: the conformance suite passes
// through Wrap, on both backends.
func TestConformanceSQLite(t *testing.T) {
	keys := keyring(t, newKey(t))
	ledgertest.Run(t, func(t *testing.T, now func() time.Time) ledger.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), &sqlite.Options{Now: now, Synchronous: sqlite.SyncNormal})
		if err != nil {
			t.Fatalf("sqlite.Open = %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return codec.Wrap(st, keys)
	})
}

func TestConformancePostgres(t *testing.T) {
	keys := keyring(t, newKey(t))
	ledgertest.Run(t, func(t *testing.T, now func() time.Time) ledger.Store {
		st, err := postgres.Open(context.Background(), pgtest.Schema(t), &postgres.Options{Now: now})
		if err != nil {
			t.Fatalf("postgres.Open = %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return codec.Wrap(st, keys)
	})
}
