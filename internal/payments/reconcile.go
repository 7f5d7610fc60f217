package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
)

// Reconcile settles an UNKNOWN create_payment of key the way a person
// would: look for the payment the key would have made. Found: SUCCEEDED,
// with the result a fresh call returned. Not found (the transaction never
// committed): FAILED, saying nothing was charged. An empty tenant is
// server.DefaultTenant.
func (a *App) Reconcile(ctx context.Context, tenant, key string) (*ledger.Record, error) {
	if tenant == "" {
		tenant = server.DefaultTenant
	}
	id := ledger.ID{Tenant: tenant, Layer: ledger.LayerServer, Tool: ToolCreate, Key: key}
	p, err := paymentByKey(ctx, a.rdb, key)
	switch {
	case err == nil:
		res := paymentResult(p)
		res.StructuredContent = p
		return server.Reconcile(ctx, a.ledger, id, ledger.StateSucceeded, res,
			fmt.Sprintf("payment %s exists for this key", p.PaymentID))
	case errors.Is(err, sql.ErrNoRows):
		return server.Reconcile(ctx, a.ledger, id, ledger.StateFailed, nil,
			"no payment was made with this key and nothing was charged; send the payment again with a new key")
	}
	return nil, err
}

// Payments counts the payments made with key (0 or 1: the key is unique).
func (a *App) Payments(ctx context.Context, key string) (int, error) {
	var n int
	if err := a.rdb.QueryRowContext(ctx, `SELECT count(*) FROM payments WHERE idempotency_key = $1`, key).Scan(&n); err != nil {
		return 0, fmt.Errorf("payments: count: %w", err)
	}
	return n, nil
}
