package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// The open-record queries read partial indexes only: records_unknown
// (UNKNOWN records) and records_lease (PROCESSING and PENDING_APPROVAL,
// the records with an owner), so they cost what is open, however many
// settled records there are. SQLite uses a partial index only when the
// query's WHERE repeats the index's own term, hence the IN beside the
// equality for PENDING_APPROVAL.
const (
	openUnknown  = `SELECT count(*), min(updated_at) FROM records WHERE state = 'UNKNOWN'`
	openApproval = `SELECT count(*), min(created_at) FROM records INDEXED BY records_lease
		WHERE state IN ('PROCESSING', 'PENDING_APPROVAL') AND state = 'PENDING_APPROVAL'`
)

// CountOpen returns how many records, of every tenant, are in state now
// and when the oldest of them got there: for UNKNOWN the write that made
// it UNKNOWN (its update time, which inconclusive findings leave as it
// is), for PENDING_APPROVAL its claim (its creation time; a lease renewal
// moves the update time). Oldest is zero when there are none. Only UNKNOWN
// and PENDING_APPROVAL have an index that bounds the count; other states
// are an error. Telemetry asks it at each metrics collection.
func (s *Store) CountOpen(ctx context.Context, state ledger.State) (n int64, oldest time.Time, err error) {
	var q string
	switch state {
	case ledger.StateUnknown:
		q = openUnknown
	case ledger.StatePendingApproval:
		q = openApproval
	default:
		return 0, time.Time{}, fmt.Errorf("sqlite: count open records: state %s has no index to count it by; ask for UNKNOWN or PENDING_APPROVAL", state)
	}
	var first sql.NullInt64
	if err := s.rdb.QueryRowContext(ctx, q).Scan(&n, &first); err != nil {
		return 0, time.Time{}, fmt.Errorf("sqlite: count %s records: %w", state, s.classify(err))
	}
	if first.Valid {
		oldest = fromNanos(first.Int64)
	}
	return n, oldest, nil
}
