package main

import (
	"context"
	"errors"
	"time"

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
	st, err := openRetrying(octx, url)
	if err == nil {
		return st, nil
	}
	if postgres.IsUnreachable(err) || errors.Is(err, context.DeadlineExceeded) {
		return nil, reasonf(reasonLedgerUnreachable, "cannot reach the ledger database %s: %v; check that PostgreSQL runs and --ledger is right", postgres.MaskDSN(url), postgres.MaskDSN(err.Error()))
	}
	return nil, reasonf(reasonLedgerInvalid, "cannot open the ledger %s: %v; check --ledger", postgres.MaskDSN(url), postgres.MaskDSN(err.Error()))
}

// openRetrying opens the store, and while no server takes the connection
// (or the one it took is lost) tries again with a growing pause until ctx
// ends. A cluster in a failover has no primary for some seconds (the old
// one is gone, the standby not yet promoted, and
// target_session_attrs=read-write refuses it): a command started then
// waits for the new primary rather than failing at once.
func openRetrying(ctx context.Context, url string) (*postgres.Store, error) {
	delay := 100 * time.Millisecond
	for {
		st, err := postgres.Open(ctx, url, nil)
		if !postgres.IsUnreachable(err) {
			return st, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}
