package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

var _ ledger.EventLog = (*Store)(nil)

// insertEvents writes a whole batch in one statement and one round trip:
// each column travels as one array.
const insertEvents = `INSERT INTO events (tenant, tool, side, outcome, duplicate,
	waited, attempts, latency_ns, at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[],
	$6::boolean[], $7::integer[], $8::bigint[], $9::timestamptz[])`

// AppendEvents implements ledger.EventLog. A batch whose connection is lost
// is sent again, so after a server restart an event may be counted twice;
// events are statistics and the docs say so.
func (s *Store) AppendEvents(ctx context.Context, events []ledger.Event) error {
	if len(events) == 0 {
		return nil
	}
	n := len(events)
	var (
		tenants, tools, sides, outcomes = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		duplicates, waited              = make([]bool, n), make([]bool, n)
		attempts                        = make([]int32, n)
		latencies                       = make([]int64, n)
		at                              = make([]time.Time, n)
	)
	for i, e := range events {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("postgres: append events: event %d: %w", i, err)
		}
		tenants[i], tools[i], sides[i], outcomes[i] = e.Tenant, e.Tool, string(e.Side), string(e.Outcome)
		duplicates[i], waited[i] = e.Duplicate, e.Waited
		attempts[i] = int32(min(e.Attempts, 1<<31-1))
		latencies[i] = int64(e.Latency)
		at[i] = e.At.UTC()
	}
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			_, err := c.Exec(ctx, insertEvents, tenants, tools, sides, outcomes, duplicates, waited, attempts, latencies, at)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("postgres: append events: %w", err)
	}
	return nil
}

// statsQuery computes every figure in one statement, so they describe one
// snapshot. percentile_disc picks the first value whose position reaches
// the fraction, which is the nearest rank ledger.NearestRank names.
const statsQuery = `WITH e AS (
	SELECT outcome, side, duplicate, waited, latency_ns FROM events
	WHERE tenant = $1 AND at >= $2 AND ($3 = '' OR side = $3))
SELECT count(*),
	count(*) FILTER (WHERE outcome = 'replayed'),
	count(*) FILTER (WHERE outcome = 'key_conflict'),
	count(*) FILTER (WHERE waited),
	count(*) FILTER (WHERE outcome = 'in_progress'),
	count(*) FILTER (WHERE side = 'server' AND duplicate),
	coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ns) FILTER (WHERE outcome = 'replayed'), 0),
	coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ns) FILTER (WHERE outcome = 'replayed'), 0),
	(SELECT count(*) FROM records WHERE tenant = $1 AND state = 'UNKNOWN' AND updated_at >= $2)
FROM e`

// Stats implements ledger.EventLog.
func (s *Store) Stats(ctx context.Context, q ledger.StatsQuery) (ledger.Stats, error) {
	var st ledger.Stats
	if err := ledger.ValidateTenant(q.Tenant); err != nil {
		return st, err
	}
	var p50, p99 int64
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			return c.QueryRow(ctx, statsQuery, q.Tenant, q.Since.UTC(), string(q.Side)).Scan(
				&st.Calls, &st.DuplicateHits, &st.KeyConflicts, &st.InProgressWaits,
				&st.InProgressTimeouts, &st.DownstreamDuplicates, &p50, &p99, &st.Unknown)
		})
	})
	if err != nil {
		return ledger.Stats{}, fmt.Errorf("postgres: stats: %w", err)
	}
	st.ReplayP50, st.ReplayP99 = time.Duration(p50), time.Duration(p99)
	return st, nil
}

// purgeEvents deletes one batch of the events older than $1, through
// events_at: a month of events is millions of rows, and one DELETE of them
// all would be one long transaction holding their row locks and WAL.
const purgeEvents = `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE at < $1 LIMIT $2)`

// eventPurgeBatch is how many events one statement of PurgeEvents deletes
// at most.
const eventPurgeBatch = 5000

// PurgeEvents implements ledger.EventLog, in batches of eventPurgeBatch.
func (s *Store) PurgeEvents(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for {
		var n int64
		err := s.retry(ctx, func() error {
			return s.with(ctx, func(c *pgxpool.Conn) error {
				tag, err := c.Exec(ctx, purgeEvents, before.UTC(), eventPurgeBatch)
				n = tag.RowsAffected()
				return err
			})
		})
		total += int(n)
		if err != nil {
			return total, fmt.Errorf("postgres: purge events: %w", err)
		}
		if n < eventPurgeBatch {
			return total, nil
		}
	}
}
