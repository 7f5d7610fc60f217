package sqlite

import (
	"context"
	"fmt"
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
