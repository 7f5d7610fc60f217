package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/mcpledger/mcpledger/ledger"
)

var _ ledger.EventSeries = (*Store)(nil)

// The series statements read one range of events_period (tenant, at) and
// group it, so they return at most intervals × tools × outcomes rows.
// Arguments: since, step (both ns), tenant, since, until, side, side.
const (
	seriesCounts = `SELECT (at - ?) / ?, tool, outcome, count(*), sum(duplicate) FROM events
		WHERE tenant = ? AND at >= ? AND at < ? AND (? = '' OR side = ?)
		GROUP BY 1, 2, 3`
)

// seriesLatency groups the same range by latency class (ledger.LatencyBounds).
var seriesLatency = func() string {
	var b strings.Builder
	b.WriteString(`SELECT (at - ?) / ?, CASE`)
	for i, d := range ledger.LatencyBounds {
		fmt.Fprintf(&b, ` WHEN latency_ns <= %d THEN %d`, d.Nanoseconds(), i)
	}
	fmt.Fprintf(&b, ` ELSE %d END, count(*) FROM events
		WHERE tenant = ? AND at >= ? AND at < ? AND (? = '' OR side = ?)
		GROUP BY 1, 2`, len(ledger.LatencyBounds))
	return b.String()
}()

// Series implements ledger.EventSeries.
func (s *Store) Series(ctx context.Context, q ledger.SeriesQuery) (*ledger.Series, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	since, side := nanos(q.Since), string(q.Side)
	args := []any{since, q.Step.Nanoseconds(), q.Tenant, since, nanos(q.Until()), side, side}
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlite: event series: %w", s.classify(err))
	}
	defer func() { _ = tx.Rollback() }() // read-only: nothing to undo
	out := &ledger.Series{}
	rows, err := tx.QueryContext(ctx, seriesCounts, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: event series: %w", s.classify(err))
	}
	for rows.Next() {
		var c ledger.SeriesCount
		if err := rows.Scan(&c.Bucket, &c.Tool, &c.Outcome, &c.Calls, &c.Duplicates); err != nil {
			return nil, fmt.Errorf("sqlite: event series: %w", s.classify(err))
		}
		out.Counts = append(out.Counts, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: event series: %w", s.classify(err))
	}
	rows, err = tx.QueryContext(ctx, seriesLatency, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: event series: latency: %w", s.classify(err))
	}
	for rows.Next() {
		var l ledger.SeriesLatency
		if err := rows.Scan(&l.Bucket, &l.Class, &l.Calls); err != nil {
			return nil, fmt.Errorf("sqlite: event series: latency: %w", s.classify(err))
		}
		out.Latency = append(out.Latency, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: event series: latency: %w", s.classify(err))
	}
	return out, nil
}
