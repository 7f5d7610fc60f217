package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/codec"
)

var _ ledger.SealedProbe = (*Store)(nil)

// SealedKeyID implements ledger.SealedProbe. It looks at the newest
// ledger.SealedProbeWindow settled records (by expiry) and as many leased
// ones (by lease), each through its index: a process with a
// key seals every record it writes, so a ledger it writes holds sealed ones
// among its newest, and the look costs the same in a ledger of any size. Of
// a record, the arguments tell (a codec seals both payloads); the result
// only when there are no arguments.
func (s *Store) SealedKeyID(ctx context.Context) (string, error) {
	prefix := []byte(ledger.SealedPrefix)
	var args, result []byte
	// Through s.with, so that a connection lost in a failover is retried
	// on the new primary rather than failing the caller at once.
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			// The newest settled records by the purge's index, and the
			// leased ones by the lease index: both partial, so each
			// subquery names its index's states.
			return c.QueryRow(ctx, `SELECT arguments, result FROM (
				(SELECT arguments, result FROM records
					WHERE state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE', 'REJECTED')
					ORDER BY expires_at DESC LIMIT $1)
				UNION ALL
				(SELECT arguments, result FROM records
					WHERE state IN ('PROCESSING', 'PENDING_APPROVAL')
					ORDER BY lease_until DESC LIMIT $1)) newest
			WHERE substring(arguments from 1 for $2) = $3 OR (coalesce(length(arguments), 0) = 0 AND substring(result from 1 for $2) = $3)
			LIMIT 1`, ledger.SealedProbeWindow, len(prefix), prefix).Scan(&args, &result)
		})
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("postgres: look for sealed payloads: %w", err)
	}
	payload := args
	if !codec.IsEncrypted(payload) {
		payload = result
	}
	sealed, _, err := codec.SealedOf(payload)
	if err != nil {
		return "", err
	}
	return sealed.KeyID, nil
}
