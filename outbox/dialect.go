package outbox

import (
	"context"
	"database/sql"
	"fmt"
)

// Dialect is the seam between the outbox and one SQL database. Every other
// statement of the package is written once, with $1-style placeholders
// numbered in order of first use, which both SQLite and PostgreSQL accept.
type Dialect struct {
	// Name is for messages.
	Name string
	// OutboxSchema creates the outbox table and its index; InboxSchema the
	// inbox table. Each statement must be idempotent (IF NOT EXISTS).
	OutboxSchema []string
	InboxSchema  []string
	// Claim leases due events to one dispatcher and returns them. Its
	// parameters are $1 owner, $2 lease end (unix ns), $3 now (unix ns),
	// $4 batch size; it returns id, topic, payload, attempts, created_at,
	// lease_until, with attempts already counting this delivery. It must be
	// one atomic statement: two dispatchers running it at once never get the
	// same event while its lease lasts.
	Claim string
}

// SQLite is the dialect for github.com/mattn/go-sqlite3. SQLite runs one
// write at a time, so the UPDATE ... WHERE id IN (SELECT ...) below is
// atomic without row locks. Open the database with a busy timeout (for
// example "file:app.db?_busy_timeout=5000&_journal_mode=WAL&_txlock=immediate")
// so that dispatchers and handlers in several processes wait for each
// other instead of failing.
var SQLite = &Dialect{
	Name: "sqlite",
	OutboxSchema: []string{
		`CREATE TABLE IF NOT EXISTS mcpledger_outbox (
			id           TEXT PRIMARY KEY,
			topic        TEXT NOT NULL,
			payload      BLOB NOT NULL,
			created_at   INTEGER NOT NULL,
			available_at INTEGER NOT NULL,
			attempts     INTEGER NOT NULL DEFAULT 0,
			lease_owner  TEXT,
			lease_until  INTEGER,
			delivered_at INTEGER,
			dead_at      INTEGER,
			last_error   TEXT
		)`,
		`CREATE INDEX IF NOT EXISTS mcpledger_outbox_due ON mcpledger_outbox (available_at)
			WHERE delivered_at IS NULL AND dead_at IS NULL`,
		fenceSchema,
	},
	InboxSchema: []string{
		`CREATE TABLE IF NOT EXISTS mcpledger_inbox (
			consumer   TEXT NOT NULL,
			event_id   TEXT NOT NULL,
			applied_at INTEGER NOT NULL,
			PRIMARY KEY (consumer, event_id)
		)`,
	},
	Claim: `UPDATE mcpledger_outbox
		SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
		WHERE id IN (
			SELECT id FROM mcpledger_outbox
			WHERE delivered_at IS NULL AND dead_at IS NULL AND available_at <= $3
			  AND (lease_until IS NULL OR lease_until <= $3)
			ORDER BY available_at, id
			LIMIT $4)
		RETURNING id, topic, payload, attempts, created_at, lease_until`,
}

func dialectOr(d *Dialect) *Dialect {
	if d == nil {
		return SQLite
	}
	return d
}

// Migrate creates the outbox table in db (the database the handlers write
// their business rows to). It is safe to run at every start.
func Migrate(ctx context.Context, db *sql.DB, d *Dialect) error {
	d = dialectOr(d)
	return migrate(ctx, db, d.Name, "outbox", d.OutboxSchema)
}

// MigrateInbox creates the inbox table in db (the consumer's database).
func MigrateInbox(ctx context.Context, db *sql.DB, d *Dialect) error {
	d = dialectOr(d)
	return migrate(ctx, db, d.Name, "inbox", d.InboxSchema)
}

func migrate(ctx context.Context, db *sql.DB, dialect, what string, stmts []string) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("outbox: migrate %s (%s): %w", what, dialect, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback() // the error returned says why
		}
	}()
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("outbox: migrate %s (%s): %w", what, dialect, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("outbox: migrate %s (%s): %w", what, dialect, err)
	}
	return nil
}
