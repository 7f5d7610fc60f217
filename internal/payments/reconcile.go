package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
		return server.Reconcile(ctx, a.ledger, id, server.Reconciliation{As: ledger.StateSucceeded, Result: res,
			By: "payments", Note: fmt.Sprintf("payment %s exists for this key", p.PaymentID)})
	case errors.Is(err, sql.ErrNoRows):
		return server.Reconcile(ctx, a.ledger, id, server.Reconciliation{As: ledger.StateFailed, By: "payments",
			Note: "no payment was made with this key and nothing was charged; send the payment again with a new key"})
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

// Listed is one payment of List, with the idempotency key it was made
// under ("tenant/key" for a tenant other than the default; empty for a
// payment made without one).
type Listed struct {
	Payment
	Key string `json:"idempotency_key,omitempty"`
}

// List returns the payments in the database, newest first.
func (a *App) List(ctx context.Context) ([]Listed, error) {
	rows, err := a.rdb.QueryContext(ctx, `SELECT id, amount_cents, currency, payee, memo, created_at, coalesce(idempotency_key, '')
		FROM payments ORDER BY created_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("payments: list: %w", err)
	}
	defer func() { _ = rows.Close() }() // a read: rows.Err reports how it ended
	var out []Listed
	for rows.Next() {
		var (
			l       Listed
			created int64
		)
		if err := rows.Scan(&l.PaymentID, &l.AmountCents, &l.Currency, &l.Payee, &l.Memo, &created, &l.Key); err != nil {
			return nil, fmt.Errorf("payments: list: %w", err)
		}
		l.CreatedAt = time.Unix(0, created).UTC().Format(time.RFC3339)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("payments: list: %w", err)
	}
	return out, nil
}
