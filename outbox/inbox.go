package outbox

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Inbox lets a consumer apply each event once. The zero value is ready
// for SQLite and PostgreSQL (the statement is portable).
type Inbox struct {
	// Consumer separates consumers sharing one database: each applies
	// every event once.
	Consumer string
}

// Apply records eventID as applied inside tx, the consumer's own
// transaction, and reports whether this is its first application. When
// fresh is false the consumer skips its work; when the transaction rolls
// back the record goes with it and the next delivery is fresh again.
func (in Inbox) Apply(ctx context.Context, tx *sql.Tx, eventID string) (fresh bool, err error) {
	if tx == nil {
		return false, fmt.Errorf("outbox: inbox apply needs the consumer's transaction")
	}
	if eventID == "" {
		return false, fmt.Errorf("outbox: inbox apply: empty event id")
	}
	res, err := tx.ExecContext(ctx,
		`INSERT INTO mcpledger_inbox (consumer, event_id, applied_at) VALUES ($1, $2, $3)
		 ON CONFLICT (consumer, event_id) DO NOTHING`,
		in.Consumer, eventID, time.Now().UnixNano())
	if err != nil {
		return false, fmt.Errorf("outbox: inbox apply %s: %w", eventID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("outbox: inbox apply %s: %w", eventID, err)
	}
	return n == 1, nil
}
