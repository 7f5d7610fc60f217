package sqlite

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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
	// Batches are at most purgeBatch, smaller when one held the lock
	// longer than purgeHold.
	if txs = s.commits.Load() - before; txs < 2 {
		t.Errorf("Purge(Limit %d) took %d transactions; want at least 2 (batches of at most %d)", purgeBatch+200, txs, purgeBatch)
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

// A purge copies the write-ahead log it wrote into the database before it
// returns, so no later commit (a call's claim) inherits the checkpoint of
// the purge's pages. The -shm file's header says how many frames the log
// holds (mxFrame) and how many a checkpoint copied (nBackfill).
func TestPurgeLeavesTheLogCheckpointed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Fewer pages than wal_autocheckpoint: SQLite's own checkpoint never
	// runs, so only the purge can have copied the log.
	const made = 3 * purgeBatch
	insert := func(ctx context.Context, tx execer, _ time.Time) ([]ledger.ID, error) {
		for i := range made {
			if _, err := tx.ExecContext(ctx, `INSERT INTO records (tenant, tool, key, fingerprint, state, reuse_policy, created_at, updated_at, expires_at)
				VALUES ('acme', 'tool', ?, 'fp', 'SUCCEEDED', 'reexecute', 1, 1, 2)`, fmt.Sprintf("k-%05d", i)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	if err := s.write(ctx, insert); err != nil {
		t.Fatal(err)
	}
	// Start the log over, so what it holds now is the purge's alone.
	if _, err := s.rdb.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	n, err := s.Purge(ctx, ledger.PurgeRequest{ExpiredBy: time.Now()})
	if err != nil || n != made {
		t.Fatalf("Purge() = %d, %v; want %d", n, err, made)
	}
	frames, copied := walIndex(t, path)
	if frames == 0 {
		t.Fatal("after the purge the write-ahead log holds no frames; want the purge's")
	}
	if copied != frames {
		t.Errorf("after the purge a checkpoint has copied %d of the log's %d frames; want all of them", copied, frames)
	}
}

// walIndex reads the -shm file's mxFrame and nBackfill
// (https://www.sqlite.org/walformat.html), little-endian as on every
// machine the tests run on.
func walIndex(t *testing.T, path string) (mxFrame, nBackfill uint32) {
	t.Helper()
	b, err := os.ReadFile(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 100 {
		t.Fatalf("%s-shm is %d bytes; want its header of 136", path, len(b))
	}
	return binary.LittleEndian.Uint32(b[16:]), binary.LittleEndian.Uint32(b[96:])
}

// A purge's batches commit without an fsync each (lazy ops), and the
// purge makes them durable with a flush before it returns: the store has
// nothing left unsynced, and its last commit is durable. (The store's
// write-behind timer may flush once more in between.)
func TestPurgeBatchesAreFlushedOnce(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const made = 3 * purgeBatch
	insert := func(ctx context.Context, tx execer, _ time.Time) ([]ledger.ID, error) {
		for i := range made {
			if _, err := tx.ExecContext(ctx, `INSERT INTO records (tenant, tool, key, fingerprint, state, reuse_policy, created_at, updated_at, expires_at)
				VALUES ('acme', 'tool', ?, 'fp', 'SUCCEEDED', 'reexecute', 1, 1, 2)`, fmt.Sprintf("k-%05d", i)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	if err := s.write(ctx, insert); err != nil {
		t.Fatal(err)
	}
	var (
		mu            sync.Mutex // the write-behind timer's flush may commit after Purge returns
		lazy, durable int
		last          bool
	)
	s.commitHook = func(l bool) {
		mu.Lock()
		defer mu.Unlock()
		if l {
			lazy++
		} else {
			durable++
		}
		last = l
	}
	n, err := s.Purge(ctx, ledger.PurgeRequest{ExpiredBy: time.Now()})
	if err != nil || n != made {
		t.Fatalf("Purge() = %d, %v; want %d", n, err, made)
	}
	if s.unsynced.Load() {
		t.Error("after the purge the store has commits not yet on disk; want the purge flushed")
	}
	mu.Lock()
	defer mu.Unlock()
	if lazy < 3 || durable < 1 || last {
		t.Errorf("the purge committed %d batches without an fsync and %d with one, the last lazy: %v; want its 3 or more batches without, and a durable flush last", lazy, durable, last)
	}
}
