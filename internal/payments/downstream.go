package payments

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/outbox"
)

// Downstream stands for the system that learns about payments (a ledger,
// a bank, a notifier) and has no idempotency of its own. It counts every
// delivery it receives and applies each event once through an Inbox, so
// tests can ask how often it saw a key and how often it acted on it.
type Downstream struct {
	db    *sql.DB
	inbox outbox.Inbox
}

// Counts is what the downstream saw for one idempotency key.
type Counts struct {
	Key string `json:"key"`
	// Deliveries counts every delivery of events carrying the key
	// (at least once: a redelivery after a crash counts again).
	Deliveries int `json:"deliveries"`
	// Applied counts events with the key applied through the inbox: one
	// per payment the key created.
	Applied int `json:"applied"`
}

// OpenDownstream opens (creating) the downstream database.
func OpenDownstream(ctx context.Context, path string) (*Downstream, error) {
	db, err := openSQLite(path)
	if err != nil {
		return nil, err
	}
	if err := outbox.MigrateInbox(ctx, db, outbox.SQLite); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	for _, s := range []string{
		`CREATE TABLE IF NOT EXISTS deliveries (event_id TEXT PRIMARY KEY, idempotency_key TEXT NOT NULL, n INTEGER NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS applied (event_id TEXT PRIMARY KEY, payment_id TEXT NOT NULL, idempotency_key TEXT NOT NULL,
			amount_cents INTEGER NOT NULL, currency TEXT NOT NULL, payee TEXT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS applied_key ON applied (idempotency_key)`,
		`CREATE INDEX IF NOT EXISTS deliveries_key ON deliveries (idempotency_key)`,
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return nil, errors.Join(fmt.Errorf("payments: downstream schema: %w", err), db.Close())
		}
	}
	return &Downstream{db: db, inbox: outbox.Inbox{Consumer: "payments-downstream"}}, nil
}

// Receive takes one delivery of payment.created. The delivery is counted
// and the event applied in one transaction (one commit, one fsync): a
// delivery that fails before its commit is neither counted nor applied,
// and the outbox delivers it again.
func (d *Downstream) Receive(ctx context.Context, e outbox.Event) error {
	var ev Event
	if err := json.Unmarshal(e.Payload, &ev); err != nil {
		return fmt.Errorf("payments: downstream: event %s: %w", e.ID, err)
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("payments: downstream: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op; on an error path the error returned says why
	if _, err := tx.ExecContext(ctx, `INSERT INTO deliveries (event_id, idempotency_key, n) VALUES ($1, $2, 1)
		ON CONFLICT (event_id) DO UPDATE SET n = n + 1`, e.ID, ev.IdempotencyKey); err != nil {
		return fmt.Errorf("payments: downstream: count delivery: %w", err)
	}
	fresh, err := d.inbox.Apply(ctx, tx, e.ID)
	if err != nil {
		return err
	}
	if fresh {
		if _, err := tx.ExecContext(ctx, `INSERT INTO applied (event_id, payment_id, idempotency_key, amount_cents, currency, payee)
			VALUES ($1, $2, $3, $4, $5, $6)`, e.ID, ev.PaymentID, ev.IdempotencyKey, ev.AmountCents, ev.Currency, ev.Payee); err != nil {
			return fmt.Errorf("payments: downstream: apply: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("payments: downstream: commit: %w", err)
	}
	return nil
}

// Count reports what the downstream saw for key.
func (d *Downstream) Count(ctx context.Context, key string) (Counts, error) {
	c := Counts{Key: key}
	if err := d.db.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM deliveries WHERE idempotency_key = $1`, key).Scan(&c.Deliveries); err != nil {
		return c, fmt.Errorf("payments: downstream count: %w", err)
	}
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM applied WHERE idempotency_key = $1`, key).Scan(&c.Applied); err != nil {
		return c, fmt.Errorf("payments: downstream count: %w", err)
	}
	return c, nil
}

// Close closes the downstream database.
func (d *Downstream) Close() error { return d.db.Close() }
