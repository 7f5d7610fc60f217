package main

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
)

// postgresConnectTimeout bounds reaching the ledger database, so a wrong
// host fails the command instead of hanging it.
const postgresConnectTimeout = 15 * time.Second

func init() {
	ledgerBackends["postgres"] = openPostgres
	ledgerBackends["postgresql"] = openPostgres
}

// openPostgres opens a shared ledger. A database that cannot be reached is
// exit 5, like an unreachable MCP server: nothing ran and the same command
// can be run again later. Anything else wrong with the URL or the database
// is exit 2.
func openPostgres(ctx context.Context, url string) (ledger.Store, error) {
	octx, cancel := context.WithTimeout(ctx, postgresConnectTimeout)
	defer cancel()
	st, err := postgres.Open(octx, url, nil)
	if err == nil {
		return st, nil
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok || errors.Is(err, context.DeadlineExceeded) {
		return nil, reasonf(reasonLedgerUnreachable, "cannot reach the ledger database %s: %v; check that PostgreSQL runs and --ledger is right", ledger.MaskDSN(url), ledger.MaskDSN(err.Error()))
	}
	return nil, reasonf(reasonLedgerInvalid, "cannot open the ledger %s: %v; check --ledger", ledger.MaskDSN(url), ledger.MaskDSN(err.Error()))
}
