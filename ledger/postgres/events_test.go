package postgres_test

import (
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

func TestEventLogConformance(t *testing.T) {
	t.Parallel()
	pgtest.URL(t)
	ledgertest.RunEventLog(t, func(t *testing.T, now func() time.Time) ledger.Store {
		return open(t, pgtest.Schema(t), &postgres.Options{Now: now})
	})
}
