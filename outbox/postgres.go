package outbox

// PostgreSQL is the dialect for PostgreSQL through database/sql, with the
// driver of github.com/jackc/pgx/v5/stdlib (driver name "pgx"):
//
//	import _ "github.com/jackc/pgx/v5/stdlib"
//
//	db, err := sql.Open("pgx", "postgres://app@db:5432/app")
//	err = outbox.Migrate(ctx, db, outbox.PostgreSQL)
//	d := &outbox.Dispatcher{DB: db, Dialect: outbox.PostgreSQL, Deliver: send}
//
// Dispatchers in any number of processes claim with FOR UPDATE SKIP
// LOCKED: each skips the events another is claiming at that moment instead
// of waiting for them, and the lease then keeps them apart until the
// delivery ends. Times are Unix nanoseconds in bigint columns, as in the
// SQLite dialect, so the rest of the package reads both alike.
var PostgreSQL = &Dialect{
	Name: "postgres",
	OutboxSchema: []string{
		// Migrators starting together would race CREATE TABLE IF NOT EXISTS
		// (it is not atomic in PostgreSQL); a transaction-scoped advisory
		// lock makes them take turns.
		`SELECT pg_advisory_xact_lock(hashtext('mcpledger_outbox migrate'))`,
		`CREATE TABLE IF NOT EXISTS mcpledger_outbox (
			id           text PRIMARY KEY,
			topic        text NOT NULL,
			payload      bytea NOT NULL,
			created_at   bigint NOT NULL,
			available_at bigint NOT NULL,
			attempts     integer NOT NULL DEFAULT 0,
			lease_owner  text,
			lease_until  bigint,
			delivered_at bigint,
			dead_at      bigint,
			last_error   text
		)`,
		`CREATE INDEX IF NOT EXISTS mcpledger_outbox_due ON mcpledger_outbox (available_at, id)
			WHERE delivered_at IS NULL AND dead_at IS NULL`,
		fenceSchema,
	},
	InboxSchema: []string{
		`SELECT pg_advisory_xact_lock(hashtext('mcpledger_inbox migrate'))`,
		`CREATE TABLE IF NOT EXISTS mcpledger_inbox (
			consumer   text NOT NULL,
			event_id   text NOT NULL,
			applied_at bigint NOT NULL,
			PRIMARY KEY (consumer, event_id)
		)`,
	},
	// RETURNING follows no order, so the outer SELECT restores the order
	// the events became due in.
	Claim: `WITH due AS (
			SELECT id FROM mcpledger_outbox
			WHERE delivered_at IS NULL AND dead_at IS NULL AND available_at <= $3
			  AND (lease_until IS NULL OR lease_until <= $3)
			ORDER BY available_at, id
			LIMIT $4
			FOR UPDATE SKIP LOCKED),
		claimed AS (
			UPDATE mcpledger_outbox o
			SET lease_owner = $1, lease_until = $2, attempts = o.attempts + 1
			FROM due WHERE o.id = due.id
			RETURNING o.id, o.topic, o.payload, o.attempts, o.created_at, o.lease_until, o.available_at)
		SELECT id, topic, payload, attempts, created_at, lease_until FROM claimed
		ORDER BY available_at, id`,
}
