package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// One failing op in a batch rolls back its own writes only.
func TestBatchIsolatesFailures(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	insert := func(key string) writeFunc {
		return func(ctx context.Context, tx execer, now time.Time) ([]ledger.ID, error) {
			_, err := tx.ExecContext(ctx, `INSERT INTO records (tenant, tool, key, fingerprint, state, created_at, updated_at, expires_at)
				VALUES ('acme', 'tool', ?, 'fp', 'SUCCEEDED', 1, 1, 1)`, key)
			return nil, err
		}
	}
	broken := errors.New("broken op")
	ops := []*op{
		{ctx: ctx, fn: insert("first"), done: make(chan struct{})},
		{ctx: ctx, fn: func(ctx context.Context, tx execer, now time.Time) ([]ledger.ID, error) {
			if _, err := insert("partial")(ctx, tx, now); err != nil {
				return nil, err
			}
			return nil, broken // after a write: the savepoint must undo it
		}, done: make(chan struct{})},
		{ctx: ctx, fn: insert("first"), done: make(chan struct{})}, // unique constraint
		{ctx: ctx, fn: insert("last"), done: make(chan struct{})},
	}
	for _, o := range ops {
		o.state.Store(opTaken)
	}
	if err := s.commitBatch(ctx, ops); err != nil {
		t.Fatalf("commitBatch = %v; want the batch committed", err)
	}
	wantErr := []bool{false, true, true, false}
	for i, o := range ops {
		if (o.err != nil) != wantErr[i] {
			t.Errorf("op %d error = %v; want error %v", i, o.err, wantErr[i])
		}
	}
	if !errors.Is(ops[1].err, broken) {
		t.Errorf("op 1 error = %v; want its own error", ops[1].err)
	}
	for key, want := range map[string]bool{"first": true, "partial": false, "last": true} {
		_, err := s.Get(ctx, ledger.ID{Tenant: "acme", Tool: "tool", Key: key})
		if found := err == nil; found != want {
			t.Errorf("Get(%q) = %v; want found %v", key, err, want)
		}
	}
}

// A caller whose context ends while its write is queued is told so, and
// the write never happens.
func TestAbandonedWriteIsSkipped(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cctx, cancel := context.WithCancel(ctx)
	o := &op{ctx: cctx, fn: func(context.Context, execer, time.Time) ([]ledger.ID, error) {
		t.Error("an abandoned op ran")
		return nil, nil
	}, done: make(chan struct{})}
	cancel()
	s.runBatch([]*op{o})
	<-o.done
	if !errors.Is(o.err, context.Canceled) {
		t.Errorf("abandoned op error = %v; want context.Canceled", o.err)
	}
}

func TestSettledList(t *testing.T) {
	want := "("
	for _, st := range ledger.States {
		if st.Settled() {
			if want != "(" {
				want += ", "
			}
			want += "'" + string(st) + "'"
		}
	}
	want += ")"
	if settledList != want {
		t.Errorf("settledList = %s; want %s (ledger.State.Settled)", settledList, want)
	}
}

func TestSynchronousSetting(t *testing.T) {
	cases := []struct {
		name string
		sync Synchronous
		want int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{
		{"default is FULL", SyncFull, 2},
		{"NORMAL on request", SyncNormal, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), &Options{Synchronous: tc.sync})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, db := range []*sql.DB{s.wdb, s.rdb} {
				var got int
				if err := db.QueryRow("PRAGMA synchronous").Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("PRAGMA synchronous = %d; want %d", got, tc.want)
				}
			}
		})
	}
}

// Outside a transaction a single op's first write is already committed, so
// a second statement after it is refused instead of silently split.
func TestSingleOpSecondWriteRefused(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	insert := `INSERT INTO records (tenant, tool, key, fingerprint, state, created_at, updated_at, expires_at)
		VALUES ('acme', 'tool', ?, 'fp', 'SUCCEEDED', 1, 1, 1)`
	err = s.writeSingle(ctx, func(ctx context.Context, tx execer, _ time.Time) ([]ledger.ID, error) {
		if _, err := tx.ExecContext(ctx, insert, "one"); err != nil {
			return nil, err
		}
		_, err := tx.ExecContext(ctx, insert, "two")
		return nil, err
	})
	if err == nil || errors.Is(err, errNeedTx) {
		t.Fatalf("writeSingle with two writes = %v; want it refused", err)
	}
	if _, err := s.Get(ctx, ledger.ID{Tenant: "acme", Tool: "tool", Key: "two"}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get(%q) = %v; want ErrNotFound", "two", err)
	}
}
