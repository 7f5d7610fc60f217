package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// A purge of more records than one batch removes them in several short
// transactions, and a Limit across batches stops at the limit. Verify
// records become tombstones once, never tombstone then delete in one call.
func TestPurgeInBatches(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const made = 2*purgeBatch + 500
	var txs int64
	insert := func(ctx context.Context, tx execer, _ time.Time) ([]ledger.ID, error) {
		for i := range made {
			policy := "reexecute"
			if i%10 == 0 {
				policy = "verify"
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO records (tenant, tool, key, fingerprint, state, reuse_policy, created_at, updated_at, expires_at)
				VALUES ('acme', 'tool', ?, 'fp', 'SUCCEEDED', ?, 1, 1, 2)`, fmt.Sprintf("k-%05d", i), policy); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	if err := s.write(ctx, insert); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	before := s.commits.Load()
	n, err := s.Purge(ctx, ledger.PurgeRequest{ExpiredBy: now, Limit: purgeBatch + 200})
	if err != nil || n != purgeBatch+200 {
		t.Fatalf("Purge(Limit %d) = %d, %v; want %d", purgeBatch+200, n, err, purgeBatch+200)
	}
	if txs = s.commits.Load() - before; txs != 2 {
		t.Errorf("Purge(Limit %d) took %d transactions; want 2 (batches of %d)", purgeBatch+200, txs, purgeBatch)
	}
	n, err = s.Purge(ctx, ledger.PurgeRequest{ExpiredBy: now})
	if want := made - purgeBatch - 200; err != nil || n != want {
		t.Fatalf("Purge() of the rest = %d, %v; want %d", n, err, want)
	}
	var left, tombstones int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(tombstone), 0) FROM records`).Scan(&left, &tombstones); err != nil {
		t.Fatal(err)
	}
	if left != made/10 || tombstones != made/10 {
		t.Errorf("after the purges %d records are left, %d of them tombstones; want the %d verify records, all tombstones", left, tombstones, made/10)
	}
}
