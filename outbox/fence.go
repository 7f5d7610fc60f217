package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/wire"
)

// fenceSchema keeps the newest fencing token seen per key in the handler's
// own database; Migrate creates it beside the outbox.
const fenceSchema = `CREATE TABLE IF NOT EXISTS mcpledger_fences (
	fence_key TEXT PRIMARY KEY,
	scope     TEXT NOT NULL,
	token     BIGINT NOT NULL
)`

// ErrStaleFence: the write comes from an owner that lost its key to a newer
// owner (a lower fencing token of the same scope); nothing may be written.
var ErrStaleFence = errors.New("outbox: stale fencing token: a newer owner holds the key")

// Fence makes the writes of tx conditional on the caller's fencing token
// for key (server.FenceFromContext gives it to a guarded handler). It
// records f as the key's newest token inside tx and fails with
// ErrStaleFence when the key already saw a newer token of the same scope,
// so a paused owner that wakes up after its key was taken over writes
// nothing: roll tx back on any error. A token of another scope (another
// client ledger using the same key) replaces the earlier one. A zero token
// (the client sent none) is no condition.
//
//	f, _ := server.FenceFromContext(ctx)
//	tx, _ := db.BeginTx(ctx, nil)
//	if err := outbox.Fence(ctx, tx, key, f); err != nil { tx.Rollback(); return err }
//	// ... INSERT INTO payments ...; outbox.Enqueue(ctx, tx, ...)
func Fence(ctx context.Context, tx *sql.Tx, key string, f wire.Fence) error {
	if tx == nil {
		return errors.New("outbox: fence needs the handler's transaction")
	}
	if f.Token <= 0 {
		return nil
	}
	res, err := tx.ExecContext(ctx,
		`INSERT INTO mcpledger_fences (fence_key, scope, token) VALUES ($1, $2, $3)
		 ON CONFLICT (fence_key) DO UPDATE SET scope = excluded.scope, token = excluded.token
		 WHERE mcpledger_fences.scope <> excluded.scope OR mcpledger_fences.token <= excluded.token`,
		key, f.Scope, f.Token)
	if err != nil {
		return fmt.Errorf("outbox: fence %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("outbox: fence %q: %w", key, err)
	}
	if n == 0 {
		return fmt.Errorf("%w (key %q, token %d of scope %q)", ErrStaleFence, key, f.Token, f.Scope)
	}
	return nil
}
