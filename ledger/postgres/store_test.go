package postgres_test

import (
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// TestConformance runs the shared suite; every store gets its own schema.
func TestConformance(t *testing.T) {
	t.Parallel()
	pgtest.URL(t)
	ledgertest.Run(t, func(t *testing.T, now func() time.Time) ledger.Store {
		return open(t, pgtest.Schema(t), &postgres.Options{Now: now, PollMin: time.Millisecond, PollMax: 50 * time.Millisecond})
	})
}

// TestConformancePortable runs the shared suite in the portable mode,
// chosen by the URL as a user would, on connections whose transactions
// are all serializable, as on CockroachDB and Spanner: concurrent claims
// of one key then fail with SQLSTATE 40001, which the mode retries.
func TestConformancePortable(t *testing.T) {
	t.Parallel()
	pgtest.URL(t)
	ledgertest.Run(t, func(t *testing.T, now func() time.Time) ledger.Store {
		url := pgtest.Schema(t) + "&" + postgres.ModeParam + "=portable&default_transaction_isolation=serializable"
		st := open(t, url, &postgres.Options{Now: now, PollMin: time.Millisecond, PollMax: 50 * time.Millisecond})
		if !st.Portable() {
			t.Fatalf("Open(%s=portable).Portable() = false", postgres.ModeParam)
		}
		return st
	})
}
