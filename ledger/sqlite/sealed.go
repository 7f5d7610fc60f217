package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/codec"
)

var _ ledger.SealedProbe = (*Store)(nil)

// sealedProbe reads the newest records by expiry (records_expiry) for a
// sealed payload.
const sealedProbe = `SELECT arguments, result FROM (
			SELECT arguments, result FROM records ORDER BY expires_at DESC LIMIT ?)
		WHERE substr(arguments, 1, ?) = ? OR (ifnull(length(arguments), 0) = 0 AND substr(result, 1, ?) = ?)
		LIMIT 1`

// SealedKeyID implements ledger.SealedProbe. It looks at the newest
// ledger.SealedProbeWindow records (by expiry, an index): a process with a
// key seals every record it writes, so a ledger it writes holds sealed ones
// among its newest, and the look costs the same in a ledger of any size. Of
// a record, the arguments tell (a codec seals both payloads); the result
// only when there are no arguments.
func (s *Store) SealedKeyID(ctx context.Context) (string, error) {
	prefix := []byte(ledger.SealedPrefix)
	var args, result []byte
	err := s.rdb.QueryRowContext(ctx, sealedProbe, ledger.SealedProbeWindow, len(prefix), prefix, len(prefix), prefix).Scan(&args, &result)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("sqlite: look for sealed payloads: %w", s.classify(err))
	}
	return sealedKeyID(args, result)
}

// sealedKeyID is the key id of whichever of args and result is sealed.
func sealedKeyID(args, result []byte) (string, error) {
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
