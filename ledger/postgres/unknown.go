package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

// countUnknown reads the partial index records_unknown only (see
// migrations/0002_events.sql), however many settled records there are.
const countUnknown = `SELECT count(*) FROM records WHERE state = 'UNKNOWN'`

// CountUnknown returns how many records, of every tenant, are in UNKNOWN
// now: the operations a person must reconcile. Telemetry asks it at each
// metrics collection for the mcpledger.records.unknown.open gauge.
func (s *Store) CountUnknown(ctx context.Context) (int64, error) {
	var n int64
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			return c.QueryRow(ctx, countUnknown).Scan(&n)
		})
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: count UNKNOWN records: %w", err)
	}
	return n, nil
}

var _ ledger.DueLister = (*Store)(nil)

// DueUnknown implements ledger.DueLister. It reads the partial index
// records_reconcile (one tenant) or records_reconcile_all (every tenant),
// both of UNKNOWN records only, in (reconcile_at, updated_at) order: one
// range scan that stops after the limit or the first record not yet due.
// With q.Tools it reads, per tool, one such range of
// records_reconcile_tool (or records_reconcile_tool_all), each bounded by
// the limit (a lateral join), and merges them.
func (s *Store) DueUnknown(ctx context.Context, q ledger.DueQuery) ([]*ledger.Record, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	sql, args := dueQuery(q, s.clock())
	var out []*ledger.Record
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			rows, err := c.Query(ctx, sql, args...)
			if err != nil {
				return err
			}
			out, err = scanRecords(rows)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: due UNKNOWN records: %w", err)
	}
	return out, nil
}

// dueQuery is DueUnknown's statement for q at now, and its arguments.
func dueQuery(q ledger.DueQuery, now time.Time) (string, []any) {
	args := []any{now, q.Size()}
	where := []string{"state = 'UNKNOWN'", "reconcile_at <= $1"}
	if !q.AllTenants {
		args = append(args, q.Tenant)
		where = append(where, "tenant = $"+strconv.Itoa(len(args)))
	}
	if len(q.Layers) > 0 {
		args = append(args, q.Layers)
		where = append(where, "layer = ANY($"+strconv.Itoa(len(args))+"::text[])")
	}
	sql := `SELECT ` + recordCols + ` FROM records WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY reconcile_at, updated_at LIMIT $2`
	if len(q.Tools) > 0 {
		args = append(args, q.Tools)
		where = append(where, "tool = due_tool.name")
		sql = `SELECT r.* FROM (SELECT DISTINCT name FROM unnest($` + strconv.Itoa(len(args)) + `::text[]) AS t(name)) AS due_tool` +
			` CROSS JOIN LATERAL (SELECT ` + recordCols + ` FROM records WHERE ` + strings.Join(where, " AND ") +
			` ORDER BY reconcile_at, updated_at LIMIT $2) AS r ORDER BY r.reconcile_at, r.updated_at LIMIT $2`
	}
	return sql, args
}
