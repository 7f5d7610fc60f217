package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

// Both sweeps work in batches of BatchSize rows, one short statement each,
// and skip rows another transaction holds (FOR UPDATE SKIP LOCKED): an owner
// completing its record at this moment is not blocked, and several
// processes sweeping at once split the work instead of queueing.

// An expired PROCESSING lease may have run the call (UNKNOWN); an expired
// PENDING_APPROVAL lease ran nothing (REJECTED). Owner and fence stay, so
// the late result of that owner can still be matched.
const expireBatch = `WITH due AS (
		SELECT tenant, layer, tool, key FROM records
		WHERE state IN ('PROCESSING', 'PENDING_APPROVAL') AND lease_until <= $1
		ORDER BY lease_until
		LIMIT $2
		FOR UPDATE SKIP LOCKED)
	UPDATE records r SET
		state = CASE r.state WHEN 'PROCESSING' THEN 'UNKNOWN' ELSE 'REJECTED' END,
		error_kind = CASE r.state WHEN 'PROCESSING' THEN $3 ELSE $4 END,
		error_message = CASE r.state
			WHEN 'PROCESSING' THEN 'the lease of owner ' || r.owner || ' ended before the call finished'
			ELSE 'the approval lease of owner ' || r.owner || ' ended before anyone answered' END,
		lease_until = NULL, updated_at = $1
	FROM due
	WHERE r.tenant = due.tenant AND r.layer = due.layer AND r.tool = due.tool AND r.key = due.key
	RETURNING r.tenant, r.layer, r.tool, r.key, r.watched`

// ExpireLeases turns every PROCESSING record whose lease has ended into
// UNKNOWN, and every such PENDING_APPROVAL record into REJECTED, and
// returns how many it changed.
func (s *Store) ExpireLeases(ctx context.Context) (int, error) {
	total := 0
	for {
		var (
			ids     []ledger.ID
			watched []bool
		)
		err := s.retry(ctx, func() error {
			return s.with(ctx, func(c *pgxpool.Conn) error {
				ids, watched = ids[:0], watched[:0]
				q := expireBatch
				if s.portable {
					q = expireBatchPortable
				}
				rows, err := c.Query(ctx, q, s.clock(), s.batchSize, ledger.KindLeaseExpired, ledger.KindApprovalExpired)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var (
						id ledger.ID
						w  bool
					)
					if err := rows.Scan(&id.Tenant, &id.Layer, &id.Tool, &id.Key, &w); err != nil {
						return err
					}
					ids, watched = append(ids, id), append(watched, w)
				}
				return rows.Err()
			})
		})
		if err != nil {
			return total, fmt.Errorf("postgres: expire leases: %w", err)
		}
		total += len(ids)
		for i, id := range ids {
			s.settled(id, watched[i])
		}
		if len(ids) < s.batchSize {
			return total, nil
		}
	}
}

// purgeBatch deletes due records, or turns those under the Verify policy
// into tombstones (only identity and fingerprint remain). A REJECTED record
// ran nothing, so there is nothing for a tombstone to guard: it is deleted. $5 is this
// call's token: a tombstone made by this call is not due again within it.
const purgeBatch = `WITH due AS (
		SELECT tenant, layer, tool, key, (reuse_policy = 'verify' AND NOT tombstone AND state <> 'REJECTED') AS keep
		FROM records
		WHERE state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE', 'REJECTED')
			AND (expires_at <= $1 OR ($2::timestamptz IS NOT NULL AND updated_at < $2))
			AND op_token IS DISTINCT FROM $5
			AND ($6 = '' OR tenant = $6)
		LIMIT $3
		FOR UPDATE SKIP LOCKED),
	gone AS (
		DELETE FROM records r USING due
		WHERE NOT due.keep AND r.tenant = due.tenant AND r.layer = due.layer AND r.tool = due.tool AND r.key = due.key
		RETURNING 1),
	kept AS (
		UPDATE records r SET tombstone = true, session = '', arguments = NULL, result = NULL,
			compacted = false, error_kind = '', error_message = '', approval = NULL,
			reconciled = NULL, findings = NULL, finding_count = 0, reconcile_at = '1970-01-01 00:00:00+00',
			trace_id = '', span_id = '', expires_at = $4::timestamptz + (r.expires_at - r.created_at), updated_at = $4, op_token = $5
		FROM due
		WHERE due.keep AND r.tenant = due.tenant AND r.layer = due.layer AND r.tool = due.tool AND r.key = due.key
		RETURNING 1)
	SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM kept), (SELECT count(*) FROM due)`

// Purge removes settled records past their retention (or last updated
// before p.UpdatedBefore). Under the Verify policy a record becomes a
// tombstone that lives one more retention period; a tombstone that is due
// again is deleted. UNKNOWN, PROCESSING and PENDING_APPROVAL are kept.
func (s *Store) Purge(ctx context.Context, p ledger.PurgeRequest) (int, error) {
	var updatedBefore *time.Time
	if !p.UpdatedBefore.IsZero() {
		u := p.UpdatedBefore.UTC()
		updatedBefore = &u
	}
	token := newToken()
	total := 0
	for {
		size := s.batchSize
		if p.Limit > 0 {
			size = min(size, p.Limit-total)
		}
		if size <= 0 {
			return total, nil
		}
		var changed, due int
		err := s.retry(ctx, func() error {
			return s.with(ctx, func(c *pgxpool.Conn) error {
				q := purgeBatch
				if s.portable {
					q = purgeBatchPortable
				}
				return c.QueryRow(ctx, q, p.ExpiredBy.UTC(), updatedBefore, size, s.clock(), token, p.Tenant).
					Scan(&changed, &due)
			})
		})
		if err != nil {
			return total, fmt.Errorf("postgres: purge: %w", err)
		}
		total += changed
		if due < size {
			return total, nil
		}
	}
}

// purgePreview counts the records purgeBatch would take, all batches
// together.
const purgePreview = `SELECT state, count(*), min(created_at), max(created_at)
	FROM records
	WHERE state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE', 'REJECTED')
		AND (expires_at <= $1 OR ($2::timestamptz IS NOT NULL AND updated_at < $2))
		AND ($3 = '' OR tenant = $3)
	GROUP BY state`

var _ ledger.PurgePreviewer = (*Store)(nil)

// PurgePreview implements ledger.PurgePreviewer.
func (s *Store) PurgePreview(ctx context.Context, p ledger.PurgeRequest) (ledger.PurgePreview, error) {
	var updatedBefore *time.Time
	if !p.UpdatedBefore.IsZero() {
		u := p.UpdatedBefore.UTC()
		updatedBefore = &u
	}
	var pv ledger.PurgePreview
	err := s.retry(ctx, func() error {
		pv = ledger.PurgePreview{ByState: map[ledger.State]int{}}
		return s.with(ctx, func(c *pgxpool.Conn) error {
			rows, err := c.Query(ctx, purgePreview, p.ExpiredBy.UTC(), updatedBefore, p.Tenant)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var (
					state          string
					n              int
					oldest, newest time.Time
				)
				if err := rows.Scan(&state, &n, &oldest, &newest); err != nil {
					return err
				}
				pv.ByState[ledger.State(state)] = n
				if pv.Oldest.IsZero() || oldest.Before(pv.Oldest) {
					pv.Oldest = oldest.UTC()
				}
				if newest.After(pv.Newest) {
					pv.Newest = newest.UTC()
				}
			}
			return rows.Err()
		})
	})
	if err != nil {
		return ledger.PurgePreview{}, fmt.Errorf("postgres: purge preview: %w", err)
	}
	return pv, nil
}

var _ ledger.TenantEraser = (*Store)(nil)

// EraseTenant implements ledger.TenantEraser: one transaction deletes the
// tenant's records and events.
func (s *Store) EraseTenant(ctx context.Context, tenant string) (int, error) {
	if err := ledger.ValidateTenant(tenant); err != nil {
		return 0, err
	}
	var n int
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			tx, err := c.Begin(ctx)
			if err != nil {
				return err
			}
			// After Commit a no-op; on an error path the error returned says why.
			defer func() { _ = tx.Rollback(ctx) }()
			tag, err := tx.Exec(ctx, `DELETE FROM records WHERE tenant = $1`, tenant)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM events WHERE tenant = $1`, tenant); err != nil {
				return err
			}
			n = int(tag.RowsAffected())
			return tx.Commit(ctx)
		})
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: erase tenant: %w", err)
	}
	return n, nil
}
