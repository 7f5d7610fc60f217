package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

var _ ledger.EventLog = (*Store)(nil)

// eventChunk bounds the rows of one INSERT: 10 parameters a row stay far
// below SQLite's limit on bound parameters.
const eventChunk = 500

// AppendEvents implements ledger.EventLog. The events share the writer's
// group commit with record writes, so they cost no fsync of their own when
// calls are in flight.
func (s *Store) AppendEvents(ctx context.Context, events []ledger.Event) error {
	if len(events) == 0 {
		return nil
	}
	for i, e := range events {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("sqlite: append events: event %d: %w", i, err)
		}
	}
	err := s.write(ctx, func(ctx context.Context, tx execer, _ time.Time) ([]ledger.ID, error) {
		for start := 0; start < len(events); start += eventChunk {
			chunk := events[start:min(start+eventChunk, len(events))]
			q, args := insertEvents(chunk)
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: append events: %w", err)
	}
	return nil
}

func insertEvents(events []ledger.Event) (string, []any) {
	var q strings.Builder
	q.WriteString(`INSERT INTO events (tenant, tool, side, outcome, duplicate,
		waited, attempts, latency_ns, at) VALUES `)
	args := make([]any, 0, 9*len(events))
	for i, e := range events {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, e.Tenant, e.Tool, string(e.Side), string(e.Outcome),
			e.Duplicate, e.Waited, e.Attempts, int64(e.Latency), nanos(e.At))
	}
	return q.String(), args
}

const statsCounts = `SELECT count(*),
	coalesce(sum(outcome = 'replayed'), 0),
	coalesce(sum(outcome = 'key_conflict'), 0),
	coalesce(sum(waited), 0),
	coalesce(sum(outcome = 'in_progress'), 0),
	coalesce(sum(side = 'server' AND duplicate), 0)
FROM events WHERE tenant = ? AND at >= ? AND (? = '' OR side = ?)`

// statsReplay picks the replay latency at one rank (OFFSET is rank-1).
const statsReplay = `SELECT latency_ns FROM events
WHERE tenant = ? AND at >= ? AND (? = '' OR side = ?) AND outcome = 'replayed'
ORDER BY latency_ns LIMIT 1 OFFSET ?`

const statsUnknown = `SELECT count(*) FROM records
WHERE tenant = ? AND state = 'UNKNOWN' AND updated_at >= ?`

// Stats implements ledger.EventLog. All figures come from one read
// transaction, so they describe one moment.
func (s *Store) Stats(ctx context.Context, q ledger.StatsQuery) (ledger.Stats, error) {
	var st ledger.Stats
	if err := ledger.ValidateTenant(q.Tenant); err != nil {
		return st, err
	}
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, fmt.Errorf("sqlite: stats: %w", s.classify(err))
	}
	defer func() { _ = tx.Rollback() }() // read-only: nothing to undo
	since, side := nanos(q.Since), string(q.Side)
	err = tx.QueryRowContext(ctx, statsCounts, q.Tenant, since, side, side).Scan(&st.Calls, &st.DuplicateHits,
		&st.KeyConflicts, &st.InProgressWaits, &st.InProgressTimeouts, &st.DownstreamDuplicates)
	if err != nil {
		return st, fmt.Errorf("sqlite: stats: %w", s.classify(err))
	}
	if st.DuplicateHits > 0 {
		for _, p := range []struct {
			at  float64
			out *time.Duration
		}{{0.50, &st.ReplayP50}, {0.99, &st.ReplayP99}} {
			var ns int64
			rank := ledger.NearestRank(p.at, st.DuplicateHits)
			if err := tx.QueryRowContext(ctx, statsReplay, q.Tenant, since, side, side, rank-1).Scan(&ns); err != nil {
				return st, fmt.Errorf("sqlite: stats: replay latency: %w", s.classify(err))
			}
			*p.out = time.Duration(ns)
		}
	}
	if err := tx.QueryRowContext(ctx, statsUnknown, q.Tenant, since).Scan(&st.Unknown); err != nil {
		return st, fmt.Errorf("sqlite: stats: unknown records: %w", s.classify(err))
	}
	return st, nil
}

// purgeEvents deletes one batch of the events older than a time, through
// events_at: a month of events is millions of rows, and one DELETE of them
// all would hold the write lock for seconds.
const purgeEvents = `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE at < ? LIMIT ?)`

// eventPurgeBatch is how many events one transaction of PurgeEvents
// deletes at most.
const eventPurgeBatch = 5000

// PurgeEvents implements ledger.EventLog, in batches of eventPurgeBatch.
func (s *Store) PurgeEvents(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for {
		var n int64
		err := s.write(ctx, func(ctx context.Context, tx execer, _ time.Time) ([]ledger.ID, error) {
			res, err := tx.ExecContext(ctx, purgeEvents, nanos(before), eventPurgeBatch)
			if err != nil {
				return nil, err
			}
			n, err = res.RowsAffected()
			return nil, err
		})
		total += int(n)
		if err != nil {
			return total, fmt.Errorf("sqlite: purge events: %w", err)
		}
		if n < eventPurgeBatch {
			return total, nil
		}
	}
}
