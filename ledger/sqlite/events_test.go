package sqlite_test

import (
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func TestEventLogConformance(t *testing.T) {
	ledgertest.RunEventLog(t, func(t *testing.T, now func() time.Time) ledger.Store {
		return openStore(t, &sqlite.Options{Now: now})
	})
}
