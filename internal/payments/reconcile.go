package payments

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
)

// findPayment is create_payment's reconciler (server.Options.Reconcilers):
// it looks for the payment the key would have made, in the payments table
// by its unique idempotency key. Found: the payment, as the result a fresh
// call returned. Not found: the transaction never committed, and the key
// runs again; even a handler still alive past its lease could not pay
// twice, since the key is the payments table's own unique key (an
// end-to-end key: a second insert of it answers with the first payment).
func (a *App) findPayment(ctx context.Context, req server.ReconcileRequest) (ledger.Finding, error) {
	key := req.Key
	if len(a.cfg.Tokens) > 0 {
		key = PaymentKey(req.Tenant, key)
	}
	p, err := paymentByKey(ctx, a.rdb, key)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ledger.Finding{Verdict: ledger.VerdictNotRun, By: "payments",
			Evidence: "no payment was made with this key: its transaction never committed, nothing was charged"}, nil
	case err != nil:
		return ledger.Finding{}, err
	}
	res := paymentResult(p)
	res.StructuredContent = p
	raw, err := json.Marshal(res)
	if err != nil {
		return ledger.Finding{}, fmt.Errorf("payments: encode the found payment: %w", err)
	}
	return ledger.Finding{Verdict: ledger.VerdictFound, Result: raw, By: "payments",
		Evidence: fmt.Sprintf("payment %s exists for this key", p.PaymentID)}, nil
}

// reconcilers are the guard's reconcilers: create_payment's, unless the
// reconciler fault takes it away or makes it lie.
func (a *App) reconcilers() map[string]server.Reconciler {
	switch a.cfg.Faults[FaultReconciler] {
	case ReconcilerMissing:
		return nil
	case ReconcilerLie:
		return map[string]server.Reconciler{ToolCreate: a.lyingFind}
	}
	return map[string]server.Reconciler{ToolCreate: a.findPayment}
}

// lyingFind is the reconciler of the "reconciler=lie" fault: the opposite
// of findPayment's answer, so that tests see what a wrong reconciler does.
func (a *App) lyingFind(ctx context.Context, req server.ReconcileRequest) (ledger.Finding, error) {
	f, err := a.findPayment(ctx, req)
	if err != nil {
		return f, err
	}
	if f.Verdict == ledger.VerdictFound {
		return ledger.Finding{Verdict: ledger.VerdictNotRun, By: "payments (lying)", Evidence: "no payment was made with this key"}, nil
	}
	p := Payment{PaymentID: newPaymentID(), Currency: "EUR", Payee: "nobody", CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	res := paymentResult(p)
	res.StructuredContent = p
	raw, err := json.Marshal(res)
	if err != nil {
		return ledger.Finding{}, err
	}
	return ledger.Finding{Verdict: ledger.VerdictFound, Result: raw, By: "payments (lying)", Evidence: "payment " + p.PaymentID + " exists"}, nil
}

// Reconcile settles an UNKNOWN create_payment of key now, with the
// reconciler the guard runs by itself (findPayment): found, SUCCEEDED
// with the payment; not found, RETRYABLE, and the next call with the key
// pays. An empty tenant is server.DefaultTenant.
func (a *App) Reconcile(ctx context.Context, tenant, key string) (*ledger.Record, error) {
	if tenant == "" {
		tenant = server.DefaultTenant
	}
	id := ledger.ID{Tenant: tenant, Layer: ledger.LayerServer, Tool: ToolCreate, Key: key}
	return a.guard.Core().ReconcileRecord(ctx, id)
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
