package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

var _ ledger.EventSeries = (*Store)(nil)

// The series statements read one range of events_period (tenant, at) and
// group it, so they return at most intervals × tools × outcomes rows.
// Arguments: since, step (seconds), tenant, until, side.
const seriesCounts = `SELECT floor(extract(epoch FROM at - $1) / $2)::int, tool, outcome, count(*), count(*) FILTER (WHERE duplicate) FROM events
	WHERE tenant = $3 AND at >= $1 AND at < $4 AND ($5 = '' OR side = $5)
	GROUP BY 1, 2, 3`

// seriesLatency groups the same range by latency class (ledger.LatencyBounds).
var seriesLatency = func() string {
	var b strings.Builder
	b.WriteString(`SELECT floor(extract(epoch FROM at - $1) / $2)::int, CASE`)
	for i, d := range ledger.LatencyBounds {
		fmt.Fprintf(&b, ` WHEN latency_ns <= %d THEN %d`, d.Nanoseconds(), i)
	}
	fmt.Fprintf(&b, ` ELSE %d END, count(*) FROM events
	WHERE tenant = $3 AND at >= $1 AND at < $4 AND ($5 = '' OR side = $5)
	GROUP BY 1, 2`, len(ledger.LatencyBounds))
	return b.String()
}()

// Series implements ledger.EventSeries.
func (s *Store) Series(ctx context.Context, q ledger.SeriesQuery) (*ledger.Series, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	args := []any{q.Since.UTC(), q.Step.Seconds(), q.Tenant, q.Until().UTC(), string(q.Side)}
	var out *ledger.Series
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			out = &ledger.Series{}
			rows, err := c.Query(ctx, seriesCounts, args...)
			if err != nil {
				return err
			}
			out.Counts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.SeriesCount, error) {
				var sc ledger.SeriesCount
				err := r.Scan(&sc.Bucket, &sc.Tool, &sc.Outcome, &sc.Calls, &sc.Duplicates)
				return sc, err
			})
			if err != nil {
				return err
			}
			rows, err = c.Query(ctx, seriesLatency, args...)
			if err != nil {
				return err
			}
			out.Latency, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.SeriesLatency, error) {
				var sl ledger.SeriesLatency
				err := r.Scan(&sl.Bucket, &sl.Class, &sl.Calls)
				return sl, err
			})
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: event series: %w", err)
	}
	return out, nil
}
