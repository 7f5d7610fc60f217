package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcpledger/mcpledger/ledger"
)

var _ ledger.SealedProbe = (*Store)(nil)

// SealedKeyID implements ledger.SealedProbe: the key id of the first
// sealed payload it finds, arguments before results (a record sealed by a
// codec has both sealed).
func (s *Store) SealedKeyID(ctx context.Context) (string, error) {
	prefix := []byte(ledger.SealedPrefix)
	for _, col := range []string{"arguments", "result"} {
		var payload []byte
		err := s.retry(ctx, func() error {
			return s.pool.QueryRow(ctx, `SELECT `+col+` FROM records WHERE substring(`+col+` from 1 for $1) = $2 LIMIT 1`, len(prefix), prefix).Scan(&payload)
		})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("postgres: look for sealed payloads: %w", err)
		}
		sealed, _, err := ledger.SealedOf(payload)
		if err != nil {
			return "", err
		}
		return sealed.KeyID, nil
	}
	return "", nil
}
