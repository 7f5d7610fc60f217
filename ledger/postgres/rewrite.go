package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcpledger/mcpledger/ledger"
)

var _ ledger.PayloadRewriter = (*Store)(nil)

// rewritePage is how many records RewritePayloads reads, and then writes
// in one transaction, at a time.
const rewritePage = 200

// RewritePayloads implements ledger.PayloadRewriter. It walks the records
// in (tenant, layer, tool, key) order in pages, calls fn outside any transaction,
// and writes a page's changes in one transaction, each conditional on the
// payloads it read. A walk cut short by a lost connection is safe to run
// again: every record it reaches is judged by what is stored then.
func (s *Store) RewritePayloads(ctx context.Context, fn ledger.RewriteFunc) (int, error) {
	type change struct {
		id                 ledger.ID
		oldArgs, oldResult []byte
		newArgs, newResult []byte
	}
	total := 0
	var after ledger.ID
	for first := true; ; first = false {
		rows, err := s.pool.Query(ctx, `SELECT tenant, layer, tool, key, arguments, result FROM records
			WHERE $1 OR (tenant, layer, tool, key) > ($2, $3, $4, $5)
			ORDER BY tenant, layer, tool, key LIMIT $6`, first, after.Tenant, after.Layer, after.Tool, after.Key, rewritePage)
		if err != nil {
			return total, fmt.Errorf("postgres: rewrite payloads: %w", err)
		}
		var changes []change
		n := 0
		for rows.Next() {
			var c change
			if err := rows.Scan(&c.id.Tenant, &c.id.Layer, &c.id.Tool, &c.id.Key, &c.oldArgs, &c.oldResult); err != nil {
				rows.Close()
				return total, fmt.Errorf("postgres: rewrite payloads: %w", err)
			}
			n++
			after = c.id
			var changed bool
			c.newArgs, c.newResult, changed, err = fn(c.id, c.oldArgs, c.oldResult)
			if err != nil {
				rows.Close()
				return total, err
			}
			if changed {
				changes = append(changes, c)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return total, fmt.Errorf("postgres: rewrite payloads: %w", err)
		}
		if len(changes) > 0 {
			written := 0
			err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
				for _, c := range changes {
					tag, err := tx.Exec(ctx, `UPDATE records SET arguments = $1, result = $2
						WHERE tenant = $3 AND layer = $4 AND tool = $5 AND key = $6
							AND arguments IS NOT DISTINCT FROM $7 AND result IS NOT DISTINCT FROM $8`,
						c.newArgs, c.newResult, c.id.Tenant, c.id.Layer, c.id.Tool, c.id.Key, c.oldArgs, c.oldResult)
					if err != nil {
						return err
					}
					written += int(tag.RowsAffected())
				}
				return nil
			})
			if err != nil {
				return total, fmt.Errorf("postgres: rewrite payloads: %w", err)
			}
			total += written
		}
		if n < rewritePage {
			return total, nil
		}
	}
}
