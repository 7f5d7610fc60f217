package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

// The open-record queries read partial indexes only: records_unknown
// (UNKNOWN records) and records_lease (PROCESSING and PENDING_APPROVAL,
// which the planner proves from the equality), so they cost what is open,
// however many settled records there are.
const (
	openUnknown  = `SELECT count(*), min(updated_at) FROM records WHERE state = 'UNKNOWN'`
	openApproval = `SELECT count(*), min(created_at) FROM records WHERE state = 'PENDING_APPROVAL'`
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
		return 0, time.Time{}, fmt.Errorf("postgres: count open records: state %s has no index to count it by; ask for UNKNOWN or PENDING_APPROVAL", state)
	}
	var first *time.Time
	err = s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			return c.QueryRow(ctx, q).Scan(&n, &first)
		})
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("postgres: count %s records: %w", state, err)
	}
	if first != nil {
		oldest = *first
	}
	return n, oldest, nil
}
