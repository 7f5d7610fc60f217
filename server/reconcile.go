package server

import (
	"context"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger"
)

// Reconcile settles an UNKNOWN operation once someone has found out what
// happened (checked the payments table, asked the downstream by its
// end-to-end key): r.Result (a *mcp.CallToolResult) is what every later
// duplicate gets back; see guard.Reconcile, which the client, the CLI and
// the console use too.
func Reconcile(ctx context.Context, store ledger.Store, id ledger.ID, r Reconciliation) (*ledger.Record, error) {
	return guard.Reconcile(ctx, store, id, r)
}

// Reconciliation is what someone found out about an UNKNOWN call.
type Reconciliation = guard.Reconciliation
