package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

var _ ledger.ReplicationReporter = (*Store)(nil)

// Replication implements ledger.ReplicationReporter: the server's
// synchronous_commit and synchronous_standby_names as the store's sessions
// see them, and pg_stat_replication. A role without pg_monitor sees its
// standbys' names but not their states.
func (s *Store) Replication(ctx context.Context) (ledger.Replication, error) {
	var r ledger.Replication
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			r = ledger.Replication{}
			if err := c.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('synchronous_standby_names')`).
				Scan(&r.SynchronousCommit, &r.SynchronousStandbyNames); err != nil {
				return err
			}
			rows, err := c.Query(ctx, `SELECT coalesce(application_name, ''), coalesce(state, ''), coalesce(sync_state, '')
				FROM pg_stat_replication ORDER BY application_name`)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var sb ledger.Standby
				if err := rows.Scan(&sb.Name, &sb.State, &sb.SyncState); err != nil {
					return err
				}
				r.Standbys = append(r.Standbys, sb)
			}
			return rows.Err()
		})
	})
	if err != nil {
		return ledger.Replication{}, fmt.Errorf("postgres: read replication settings: %w", err)
	}
	return r, nil
}
