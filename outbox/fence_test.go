package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/mcpledger/mcpledger/outbox"
	"github.com/mcpledger/mcpledger/wire"
)

// fencedWrite is a handler's business write under the caller's fence: the
// row and the fence commit together or not at all.
func fencedWrite(ctx context.Context, db *sql.DB, key string, f wire.Fence, row string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := outbox.Fence(ctx, tx, key, f); err != nil {
		tx.Rollback()
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO writes (key, row) VALUES ($1, $2)`, key, row); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func testFence(t *testing.T, db *sql.DB) {
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE writes (key TEXT NOT NULL, row TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		fence wire.Fence
		stale bool
	}{
		{"first owner", wire.Fence{Token: 1, Scope: "a"}, false},
		{"the owner that took the key over", wire.Fence{Token: 2, Scope: "a"}, false},
		{"the paused first owner wakes up", wire.Fence{Token: 1, Scope: "a"}, true},
		{"the current owner again", wire.Fence{Token: 2, Scope: "a"}, false},
		{"another ledger's owner of the same key", wire.Fence{Token: 1, Scope: "b"}, false},
		{"no token: no condition", wire.Fence{}, false},
	}
	want := 0
	for _, s := range steps {
		err := fencedWrite(ctx, db, "order-7", s.fence, s.name)
		if s.stale != errors.Is(err, outbox.ErrStaleFence) || (!s.stale && err != nil) {
			t.Fatalf("%s: fenced write = %v; want stale %v", s.name, err, s.stale)
		}
		if !s.stale {
			want++
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM writes`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Fatalf("%s: %d rows written; want %d (a stale owner writes nothing)", s.name, n, want)
		}
	}
}

func TestFenceSQLite(t *testing.T) { testFence(t, producer(t, t.TempDir())) }

func TestFencePostgres(t *testing.T) { testFence(t, pgDB(t)) }
