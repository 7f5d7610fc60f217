package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
	if err := s.rdb.QueryRowContext(ctx, countUnknown).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count UNKNOWN records: %w", s.classify(err))
	}
	return n, nil
}

var _ ledger.DueLister = (*Store)(nil)

// DueUnknown implements ledger.DueLister. It reads the partial index
// records_reconcile (one tenant) or records_reconcile_all (every tenant),
// both of UNKNOWN records only, in (reconcile_at, updated_at) order, so it
// stops after the limit or the first record not yet due. With q.Tools it
// reads one range of records_reconcile_tool (or records_reconcile_tool_all)
// per tool, each bounded by the limit, and merges them.
func (s *Store) DueUnknown(ctx context.Context, q ledger.DueQuery) ([]*ledger.Record, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	query, args := dueQuery(q, nanos(s.opts.Now()))
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: due UNKNOWN records: %w", s.classify(err))
	}
	recs, err := scanAll(rows, -1)
	if err != nil {
		return nil, fmt.Errorf("sqlite: due UNKNOWN records: %w", s.classify(err))
	}
	return recs, nil
}

// dueQuery is DueUnknown's statement for q at now, and its arguments.
func dueQuery(q ledger.DueQuery, now int64) (string, []any) {
	var b strings.Builder
	var args []any
	// one writes the select of one index range: of tool when not "".
	one := func(tool string) {
		b.WriteString(`SELECT ` + columns + ` FROM records`)
		switch {
		case tool != "" && q.AllTenants:
			b.WriteString(` INDEXED BY records_reconcile_tool_all WHERE state = 'UNKNOWN' AND tool = ?`)
			args = append(args, tool)
		case tool != "":
			b.WriteString(` INDEXED BY records_reconcile_tool WHERE state = 'UNKNOWN' AND tenant = ? AND tool = ?`)
			args = append(args, q.Tenant, tool)
		case q.AllTenants:
			b.WriteString(` INDEXED BY records_reconcile_all WHERE state = 'UNKNOWN'`)
		default:
			b.WriteString(` INDEXED BY records_reconcile WHERE state = 'UNKNOWN' AND tenant = ?`)
			args = append(args, q.Tenant)
		}
		b.WriteString(` AND reconcile_at <= ?`)
		args = append(args, now)
		if len(q.Layers) > 0 {
			b.WriteString(` AND layer IN (?` + strings.Repeat(`, ?`, len(q.Layers)-1) + `)`)
			for _, l := range q.Layers {
				args = append(args, l)
			}
		}
		b.WriteString(` ORDER BY reconcile_at, updated_at LIMIT ?`)
		args = append(args, q.Size())
	}
	if tools := distinct(q.Tools); len(tools) > 0 {
		// A compound select orders only its result: each range is a
		// subquery with its own order and limit.
		for i, tool := range tools {
			if i > 0 {
				b.WriteString(` UNION ALL `)
			}
			b.WriteString(`SELECT * FROM (`)
			one(tool)
			b.WriteString(`)`)
		}
		b.WriteString(` ORDER BY reconcile_at, updated_at LIMIT ?`)
		args = append(args, q.Size())
	} else {
		one("")
	}
	return b.String(), args
}

// distinct is ss without repeats, in order.
func distinct(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
