package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

// The portable mode serves PG-wire distributed databases (CockroachDB,
// YugabyteDB, Spanner's PostgreSQL interface, Aurora DSQL), which lack
// features the default mode uses or run every transaction serializably:
//
//   - No LISTEN/NOTIFY. Followers in other processes poll the record, from
//     Options.PollMin doubling to Options.PollMax; followers in this
//     process are still woken by the writer at once.
//   - No advisory locks. Concurrent openers migrate by racing for each
//     migration's version row, inserted first in the migration's own
//     transaction: the loser's insert waits for the winner's commit and
//     then does nothing, and the loser skips that migration.
//   - No sequences anywhere near a fence. A fence is 1 when a claim inserts
//     the key's record and fence + 1 in the UPDATE of every take-over, in
//     both modes: derived inside the claim's own transaction.
//   - No synchronous_commit: ledger.WriteBehind writes durably.
//   - A serialization failure (SQLSTATE 40001: the server aborted the
//     transaction on a conflict, nothing of it committed) is retried with
//     the same key, the same write token and the same fence, like a
//     statement that never reached the server, for Options.ReconnectFor.
//     40003 (CockroachDB's "result is ambiguous") is a commit whose fate
//     is unknown: the write reads its row back by its token, as after a
//     lost connection.

// ModeParam is the URL parameter that chooses the store's mode:
// mcpledger_mode=portable, or mcpledger_mode=default. Open removes it
// before the URL reaches the driver, so the server never sees it.
const ModeParam = "mcpledger_mode"

// takeMode removes every ModeParam from url's query and reports whether it
// asks for the portable mode. The rest of the URL is kept byte for byte
// (a multi-host URL is no valid net/url URL, so the query is cut by hand).
func takeMode(url string) (rest string, portable bool, err error) {
	base, query, ok := strings.Cut(url, "?")
	if !ok {
		return url, false, nil
	}
	var kept []string
	for _, kv := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if k != ModeParam {
			kept = append(kept, kv)
			continue
		}
		switch strings.ToLower(v) {
		case "portable":
			portable = true
		case "default", "":
			portable = false
		default:
			return "", false, fmt.Errorf("postgres: open: %s=%q: want portable or default", ModeParam, v)
		}
	}
	if len(kept) == 0 {
		return base, portable, nil
	}
	return base + "?" + strings.Join(kept, "&"), portable, nil
}

// DriverURL is url without ModeParam: what a program that connects to the
// ledger's database with pgx itself (not through Open) passes to the
// driver, which would send the parameter to the server.
func DriverURL(url string) (string, error) {
	rest, _, err := takeMode(url)
	return rest, err
}

// Portable reports whether s runs in the portable mode (Options.Portable,
// or mcpledger_mode=portable in the URL).
func (s *Store) Portable() bool { return s.portable }

// sqlState is the SQLSTATE of err, or "".
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// portableErr turns the portable mode's retryable failures of a statement
// into *lostError, which every operation's retry loop already handles: a
// serialization failure (40001) or a deadlock (40P01) aborted the whole
// transaction, so nothing was written and the write runs again with the
// same key and token; an ambiguous commit (40003) is a write that may
// have committed, which the writer reads back by its token. Any other
// error is returned as it is.
func portableErr(err error) error {
	switch sqlState(err) {
	case "40001", "40P01":
		serializationRetries.Add(1)
		return &lostError{err: fmt.Errorf("the server aborted the transaction on a conflict (retried with the same key for Options.ReconnectFor; raise it if conflicts outlast it): %w", err), unsent: true}
	case "40003":
		return &lostError{err: fmt.Errorf("the server could not say whether the transaction committed (the write reads its row back): %w", err)}
	}
	return err
}

// serializationRetries counts the portable mode's retried serialization
// failures and deadlocks, so that a test can show they happened.
var serializationRetries atomic.Int64

// pollWait is Wait in the portable mode: no notifications from other
// processes, so the follower reads the record again after a delay that
// starts at pollMin and doubles up to pollMax, and at once when a writer
// of this Store settles it.
func (s *Store) pollWait(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	w := s.waiters.add(notifyPayload(id))
	defer s.waiters.remove(w)
	poll := s.pollMin
	var last *ledger.Record
	for {
		// Registered before reading: a change committed after this read
		// finds the waiter and its signal is kept in the buffered channel.
		rec, err := s.Get(ctx, id)
		if err != nil {
			if ctx.Err() != nil && last != nil {
				return last, ctx.Err()
			}
			return last, err
		}
		last = rec
		if hook := testHookWaitRead.Load(); hook != nil {
			(*hook)(rec)
		}
		if !rec.State.Waiting() {
			return rec, nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return last, ctx.Err()
		case <-w.ch:
			t.Stop()
		case <-t.C:
			poll = min(2*poll, s.pollMax)
		}
	}
}

// migrateRacing is migrate without an advisory lock, for the portable
// mode. Each pending migration runs in its own transaction that first
// inserts the migration's version row: of several openers, one inserts
// it, and the others' inserts wait for that transaction and then do
// nothing, so they skip the migration. A creation of the schema or of
// schema_migrations that loses a race to another opener's is tried again.
func migrateRacing(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	ident := pgx.Identifier{schema}.Sanitize()
	setup := []struct{ what, sql string }{
		{"create schema " + ident, `CREATE SCHEMA IF NOT EXISTS ` + ident},
		{"create schema_migrations", `CREATE TABLE IF NOT EXISTS ` + ident + `.schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`},
	}
	for _, st := range setup {
		if err := raced(ctx, func() error { _, err := pool.Exec(ctx, st.sql); return err }); err != nil {
			return fmt.Errorf("postgres: migrate: %s: %w", st.what, err)
		}
	}
	var current int
	if err := raced(ctx, func() error {
		return pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+ident+`.schema_migrations`).Scan(&current)
	}); err != nil {
		return fmt.Errorf("postgres: migrate: read version: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("%w: schema %s is at version %d, this build knows %d; upgrade mcpledger", ErrSchemaTooNew, ident, current, len(ms))
	}
	for _, m := range ms[current:] {
		err := raced(ctx, func() error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+ident); err != nil {
					return err
				}
				var mine bool
				err := tx.QueryRow(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)
					ON CONFLICT (version) DO NOTHING RETURNING true`, m.version, m.name).Scan(&mine)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil // another opener applied it; the empty transaction ends
				}
				if err != nil {
					return err
				}
				_, err = tx.Exec(ctx, m.sql)
				return err
			})
		})
		if err != nil {
			return fmt.Errorf("postgres: migrate: apply %s to %s: %w", m.name, ident, err)
		}
	}
	return nil
}

// raced runs f again, a few times, while it fails the way a statement
// does that lost a race with another opener's: a duplicate catalog entry
// (23505, 42P06, 42P07; 42710 when two CREATE TABLE IF NOT EXISTS race
// for the table's row type) or a serialization failure (40001).
func raced(ctx context.Context, f func() error) error {
	delay := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := f()
		switch sqlState(err) {
		case "23505", "42P06", "42P07", "42710", "40001", "40P01":
		default:
			return err
		}
		if attempt == 8 {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay *= 2
	}
}

// expireBatchPortable is expireBatch without FOR UPDATE SKIP LOCKED, which
// Aurora DSQL allows only with equality on the whole primary key and
// Spanner not at all: the due records are read without a lock, and the
// UPDATE checks again that each is still leased and past its lease, a
// check PostgreSQL makes on the row's latest version (and a distributed
// database's conflict check, else a 40001, retried). Two sweepers then
// race for the same records instead of splitting them; each record still
// changes once.
const expireBatchPortable = `UPDATE records r SET
		state = CASE r.state WHEN 'PROCESSING' THEN 'UNKNOWN' ELSE 'REJECTED' END,
		error_kind = CASE r.state WHEN 'PROCESSING' THEN $3 ELSE $4 END,
		error_message = CASE r.state
			WHEN 'PROCESSING' THEN 'the lease of owner ' || r.owner || ' ended before the call finished'
			ELSE 'the approval lease of owner ' || r.owner || ' ended before anyone answered' END,
		lease_until = NULL, updated_at = $1
	FROM (SELECT tenant, layer, tool, key FROM records
		WHERE state IN ('PROCESSING', 'PENDING_APPROVAL') AND lease_until <= $1
		ORDER BY lease_until
		LIMIT $2) AS due
	WHERE r.tenant = due.tenant AND r.layer = due.layer AND r.tool = due.tool AND r.key = due.key
		AND r.state IN ('PROCESSING', 'PENDING_APPROVAL') AND r.lease_until <= $1
	RETURNING r.tenant, r.layer, r.tool, r.key, r.watched`

// purgeBatchPortable is purgeBatch without FOR UPDATE SKIP LOCKED, for the
// same reason as expireBatchPortable: the delete and the update check
// again that each record is still settled and due.
const purgeBatchPortable = `WITH due AS (
		SELECT tenant, layer, tool, key, (reuse_policy = 'verify' AND NOT tombstone AND state <> 'REJECTED') AS keep
		FROM records
		WHERE state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE', 'REJECTED')
			AND (expires_at <= $1 OR ($2::timestamptz IS NOT NULL AND updated_at < $2))
			AND op_token IS DISTINCT FROM $5
			AND ($6 = '' OR tenant = $6)
		LIMIT $3),
	gone AS (
		DELETE FROM records r USING due
		WHERE NOT due.keep AND r.tenant = due.tenant AND r.layer = due.layer AND r.tool = due.tool AND r.key = due.key
			AND r.state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE', 'REJECTED')
			AND (r.expires_at <= $1 OR ($2::timestamptz IS NOT NULL AND r.updated_at < $2))
		RETURNING 1),
	kept AS (
		UPDATE records r SET tombstone = true, session = '', arguments = NULL, result = NULL,
			compacted = false, error_kind = '', error_message = '', approval = NULL,
			reconciled = NULL, findings = NULL, finding_count = 0, reconcile_at = '1970-01-01 00:00:00+00',
			trace_id = '', span_id = '', expires_at = $4::timestamptz + (r.expires_at - r.created_at), updated_at = $4, op_token = $5
		FROM due
		WHERE due.keep AND r.tenant = due.tenant AND r.layer = due.layer AND r.tool = due.tool AND r.key = due.key
			AND r.state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE')
			AND (r.expires_at <= $1 OR ($2::timestamptz IS NOT NULL AND r.updated_at < $2))
			AND r.op_token IS DISTINCT FROM $5
		RETURNING 1)
	SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM kept), (SELECT count(*) FROM due)`
