package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/mcpledger/mcpledger/outbox"
)

// openDB opens a SQLite file the way the package docs recommend.
func openDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", fmt.Sprintf("file:%s?_busy_timeout=10000&_journal_mode=WAL&_txlock=immediate", path))
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// producer opens a migrated producer database in dir.
func producer(t testing.TB, dir string) *sql.DB {
	t.Helper()
	db := openDB(t, filepath.Join(dir, "app.db"))
	if err := outbox.Migrate(context.Background(), db, nil); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

// enqueue commits n events, one transaction each, and returns their ids.
func enqueue(t testing.TB, db *sql.DB, n int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for i := range n {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := outbox.Enqueue(ctx, tx, "test.event", []byte(fmt.Sprintf(`{"n":%d}`, i)))
		if err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func count(t testing.TB, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// consumer is a downstream database that counts every delivery it sees and
// every application it makes (through an Inbox).
type consumer struct {
	db    *sql.DB
	inbox outbox.Inbox
}

func newConsumer(t testing.TB, path string) *consumer {
	t.Helper()
	db := openDB(t, path)
	ctx := context.Background()
	if err := outbox.MigrateInbox(ctx, db, nil); err != nil {
		t.Fatalf("MigrateInbox: %v", err)
	}
	for _, s := range []string{
		`CREATE TABLE IF NOT EXISTS seen (event_id TEXT PRIMARY KEY, n INTEGER NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS applied (event_id TEXT PRIMARY KEY, n INTEGER NOT NULL)`,
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return &consumer{db: db, inbox: outbox.Inbox{Consumer: "test"}}
}

// receive counts the delivery, then applies the event once.
func (c *consumer) receive(ctx context.Context, e outbox.Event) error {
	if _, err := c.db.ExecContext(ctx,
		`INSERT INTO seen (event_id, n) VALUES ($1, 1) ON CONFLICT (event_id) DO UPDATE SET n = n + 1`, e.ID); err != nil {
		return err
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	fresh, err := c.inbox.Apply(ctx, tx, e.ID)
	if err != nil {
		return err
	}
	if fresh {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO applied (event_id, n) VALUES ($1, 1) ON CONFLICT (event_id) DO UPDATE SET n = n + 1`, e.ID); err != nil {
			return err
		}
	}
	return tx.Commit()
}
