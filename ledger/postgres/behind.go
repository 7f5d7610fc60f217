package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

// writeBehind runs the transition statement query in a transaction that
// commits with synchronous_commit off (ledger.WriteBehind), in one round
// trip: BEGIN, SET LOCAL, the statement and COMMIT go out as one batch.
// The commit is visible to every session at once; the WAL writer flushes
// it shortly after, and any later durable commit flushes it first, since
// WAL is flushed in order. scan reads the statement's row.
func writeBehind(ctx context.Context, c *pgxpool.Conn, query string, args []any,
	scan func(pgx.Row) (*ledger.Record, rowMeta, error)) (*ledger.Record, rowMeta, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit TO off")
	b.Queue(query, args...)
	b.Queue("COMMIT")
	br := c.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	var (
		out  *ledger.Record
		meta rowMeta
	)
	if err == nil {
		out, meta, err = scan(br.QueryRow())
		if err == nil || errors.Is(err, pgx.ErrNoRows) {
			// No row is a lost compare-and-set, which the caller reads
			// back; the empty transaction still has to end.
			if _, cerr := br.Exec(); cerr != nil {
				err = cerr
			}
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return out, meta, err
}
