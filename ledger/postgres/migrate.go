package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrSchemaTooNew: the database was migrated by a newer version of this
// package. Open refuses it rather than guess at columns it does not know.
var ErrSchemaTooNew = errors.New("postgres: ledger schema is newer than this build")

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. File names
// are NNNN_description.sql; versions start at 1 and have no gaps.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("postgres: migrations: %w", err)
	}
	sort.Strings(names)
	out := make([]migration, 0, len(names))
	for i, path := range names {
		base := strings.TrimPrefix(path, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != i+1 {
			return nil, fmt.Errorf("postgres: migration %s: want name %04d_description.sql", base, i+1)
		}
		body, err := migrationFiles.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("postgres: migration %s: %w", base, err)
		}
		out = append(out, migration{version: v, name: base, sql: string(body)})
	}
	return out, nil
}

// SchemaVersion is the schema version this build migrates to.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate brings schema up to date. A session advisory lock keyed by the
// schema name serializes concurrent openers (eight processes starting at
// once must not race CREATE SCHEMA or apply a migration twice); each
// migration then runs in its own transaction together with its version row,
// so a crash leaves the schema at a clean version.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Release()

	lockKey := "mcpledger.migrate:" + schema
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, lockKey); err != nil {
		return fmt.Errorf("postgres: migrate: take advisory lock: %w", err)
	}
	defer func() {
		// A lost connection releases the lock on its own; a failed unlock on
		// a live one must not leave it to the next user of the connection.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, lockKey); err != nil {
			// Destroying it is the remedy; Release drops a closed one
			// whatever Close said.
			_ = conn.Conn().Close(context.Background())
		}
	}()

	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+ident); err != nil {
		return fmt.Errorf("postgres: migrate: create schema %s: %w", ident, err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+ident+`.schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("postgres: migrate: create schema_migrations: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+ident+`.schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("postgres: migrate: read version: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("%w: schema %s is at version %d, this build knows %d; upgrade mcpledger", ErrSchemaTooNew, ident, current, len(ms))
	}
	for _, m := range ms[current:] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			// SET LOCAL scopes the search path to this transaction, so the
			// migration files stay free of schema names.
			if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+ident); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: migrate: apply %s to %s: %w", m.name, ident, err)
		}
	}
	return nil
}
