package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

var _ ledger.PayloadRewriter = (*Store)(nil)

// rewritePage is how many records RewritePayloads reads, and then writes
// in one transaction, at a time.
const rewritePage = 200

// RewritePayloads implements ledger.PayloadRewriter. It walks the records
// by row id in pages, calls fn outside any transaction, and writes a page's
// changes in one transaction, each conditional on the payloads it read.
//
// The old bytes must not linger (a rewrite is how plain payloads become
// encrypted): the writes run with secure_delete, which zeroes the space
// they free, and when any record changed a TRUNCATE checkpoint then
// empties the write-ahead log of the old page images. A checkpoint that
// another process's open read keeps from finishing is left to SQLite's
// next one.
func (s *Store) RewritePayloads(ctx context.Context, fn ledger.RewriteFunc) (int, error) {
	total, err := s.rewritePayloads(ctx, fn)
	if total == 0 {
		return total, err
	}
	if _, cerr := s.rdb.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); cerr != nil && err == nil {
		err = fmt.Errorf("sqlite: rewrite payloads: checkpoint: %w", s.classify(cerr))
	}
	return total, err
}

// rewritePayloads' statements: a page of records by id, and one record's
// payloads by id, compared with what the page read.
const (
	rewriteSelect = `SELECT id, tenant, layer, tool, key, arguments, result
			FROM records WHERE id > ? ORDER BY id LIMIT ?`
	rewriteUpdate = `UPDATE records SET arguments = ?, result = ?
						WHERE id = ? AND arguments IS ? AND result IS ?`
)

func (s *Store) rewritePayloads(ctx context.Context, fn ledger.RewriteFunc) (int, error) {
	type change struct {
		row                int64
		oldArgs, oldResult []byte
		newArgs, newResult []byte
	}
	total := 0
	for after := int64(0); ; {
		rows, err := s.rdb.QueryContext(ctx, rewriteSelect, after, rewritePage)
		if err != nil {
			return total, fmt.Errorf("sqlite: rewrite payloads: %w", s.classify(err))
		}
		var changes []change
		n := 0
		for rows.Next() {
			var (
				c  change
				id ledger.ID
			)
			if err := rows.Scan(&c.row, &id.Tenant, &id.Layer, &id.Tool, &id.Key, &c.oldArgs, &c.oldResult); err != nil {
				_ = rows.Close() // a read, and the error returned says why
				return total, fmt.Errorf("sqlite: rewrite payloads: %w", s.classify(err))
			}
			n++
			after = c.row
			var changed bool
			c.newArgs, c.newResult, changed, err = fn(id, c.oldArgs, c.oldResult)
			if err != nil {
				_ = rows.Close() // a read, and the error returned says why
				return total, err
			}
			if changed {
				changes = append(changes, c)
			}
		}
		if err := rows.Err(); err != nil {
			return total, fmt.Errorf("sqlite: rewrite payloads: %w", s.classify(err))
		}
		if err := rows.Close(); err != nil {
			return total, fmt.Errorf("sqlite: rewrite payloads: %w", s.classify(err))
		}
		if len(changes) > 0 {
			written := 0
			err := s.write(ctx, func(ctx context.Context, tx execer, _ time.Time) ([]ledger.ID, error) {
				written = 0 // the writer may run an op again after a failed batch
				// secure_delete is per connection and costs only
				// while on: it is turned off again after the page.
				if _, err := tx.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
					return nil, fmt.Errorf("sqlite: rewrite payloads: %w", err)
				}
				for _, c := range changes {
					res, err := tx.ExecContext(ctx, rewriteUpdate,
						c.newArgs, c.newResult, c.row, c.oldArgs, c.oldResult)
					if err != nil {
						return nil, fmt.Errorf("sqlite: rewrite payloads: %w", err)
					}
					k, err := res.RowsAffected()
					if err != nil {
						return nil, fmt.Errorf("sqlite: rewrite payloads: %w", err)
					}
					written += int(k)
				}
				if _, err := tx.ExecContext(ctx, `PRAGMA secure_delete = OFF`); err != nil {
					return nil, fmt.Errorf("sqlite: rewrite payloads: %w", err)
				}
				return nil, nil
			})
			if err != nil {
				return total, err
			}
			total += written
		}
		if n < rewritePage {
			return total, nil
		}
	}
}
