package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
		err := s.rdb.QueryRowContext(ctx, `SELECT `+col+` FROM records WHERE substr(`+col+`, 1, ?) = ? LIMIT 1`, len(prefix), prefix).Scan(&payload)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("sqlite: look for sealed payloads: %w", s.classify(err))
		}
		sealed, _, err := ledger.SealedOf(payload)
		if err != nil {
			return "", err
		}
		return sealed.KeyID, nil
	}
	return "", nil
}
