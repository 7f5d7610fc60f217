package payments

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// KeysWithPrefix reads the idempotency keys of the payments in the
// payments database at path whose key starts with prefix, each once (the
// key is unique), from another process while the server runs: a load
// benchmark counts what was paid against what was answered. The database
// must exist; nothing is written to it.
func KeysWithPrefix(ctx context.Context, path, prefix string) ([]string, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("payments: no payments database at %s; start the server with -db %s first", path, path)
	}
	db, err := openSQLite(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = db.Close() }() // read only
	// Keys are made of [A-Za-z0-9._:~-], all below 0x7f: the range is
	// every key with the prefix, read off the unique index.
	rows, err := db.QueryContext(ctx, `SELECT idempotency_key FROM payments
		WHERE idempotency_key >= $1 AND idempotency_key < $2`, prefix, prefix+"\x7f")
	if err != nil {
		return nil, fmt.Errorf("payments: read keys of %s: %w", path, err)
	}
	defer func() { _ = rows.Close() }() // a read: rows.Err reports how it ended
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("payments: read keys of %s: %w", path, err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("payments: read keys of %s: %w", path, err)
	}
	return keys, nil
}
