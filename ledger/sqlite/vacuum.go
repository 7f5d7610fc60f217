package sqlite

import (
	"context"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
)

var _ ledger.Vacuumer = (*Store)(nil)

// Vacuum implements ledger.Vacuumer: SQLite's VACUUM rewrites the file
// without its free pages (what purges left), then the WAL is checkpointed
// and truncated. It holds the write lock while it runs, about a second
// per 100 MB of ledger, so run it when calls are few.
//
// The ledger keeps auto_vacuum off rather than INCREMENTAL: switching an
// existing file to it needs this same full VACUUM once, it frees pages but
// leaves the file fragmented, and it costs every delete a pointer-map
// update; a purge's free pages are reused by the next writes anyway.
func (s *Store) Vacuum(ctx context.Context) (ledger.Vacuumed, error) {
	var v ledger.Vacuumed
	size := func() (int64, error) {
		var pages, pageSize int64
		err := s.wdb.QueryRowContext(ctx, `SELECT (SELECT page_count FROM pragma_page_count()), (SELECT page_size FROM pragma_page_size())`).Scan(&pages, &pageSize)
		return pages * pageSize, err
	}
	var err error
	if v.Before, err = size(); err != nil {
		return v, fmt.Errorf("sqlite: vacuum %s: %w", s.path, s.classify(err))
	}
	if _, err := s.wdb.ExecContext(ctx, `VACUUM`); err != nil {
		return v, fmt.Errorf("sqlite: vacuum %s: %w", s.path, s.classify(err))
	}
	if _, err := s.wdb.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return v, fmt.Errorf("sqlite: vacuum %s: checkpoint: %w", s.path, s.classify(err))
	}
	if v.After, err = size(); err != nil {
		return v, fmt.Errorf("sqlite: vacuum %s: %w", s.path, s.classify(err))
	}
	return v, nil
}
