package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/outbox"
)

// pgDB opens the test's own PostgreSQL schema through database/sql and
// migrates the outbox and inbox into it.
func pgDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if err := outbox.Migrate(ctx, db, outbox.PostgreSQL); err != nil {
		t.Fatalf("Migrate(PostgreSQL) = %v", err)
	}
	if err := outbox.MigrateInbox(ctx, db, outbox.PostgreSQL); err != nil {
		t.Fatalf("MigrateInbox(PostgreSQL) = %v", err)
	}
	return db
}

// TestPostgresMigrateConcurrently: processes starting together all migrate;
// none fails on the others' CREATE TABLE.
func TestPostgresMigrateConcurrently(t *testing.T) {
	db := pgDB(t)
	if _, err := db.Exec(`DROP TABLE mcpledger_outbox, mcpledger_inbox`); err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = outbox.Migrate(context.Background(), db, outbox.PostgreSQL)
			if errs[i] == nil {
				errs[i] = outbox.MigrateInbox(context.Background(), db, outbox.PostgreSQL)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migrator %d: %v", i, err)
		}
	}
}

func TestPostgresEnqueueFollowsTheTransaction(t *testing.T) {
	for _, tc := range []struct {
		name   string
		commit bool
		want   int
	}{
		{"commit keeps the event", true, 1},
		{"rollback drops the event", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgDB(t)
			ctx := context.Background()
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			id, err := outbox.Enqueue(ctx, tx, "order.created", []byte(`{"id":"o-1"}`))
			if err != nil {
				t.Fatalf("Enqueue = %v", err)
			}
			if tc.commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := count(t, db, `SELECT count(*) FROM mcpledger_outbox WHERE id = $1`, id); got != tc.want {
				t.Errorf("events with id %s = %d; want %d", id, got, tc.want)
			}
		})
	}
}

// TestPostgresClaimSkipsLocked: dispatchers claiming at the same moment
// never get the same event.
func TestPostgresClaimSkipsLocked(t *testing.T) {
	db := pgDB(t)
	const events, dispatchers = 200, 8
	pgEnqueue(t, db, events)
	var (
		mu     sync.Mutex // guards seen
		seen   = map[string]int{}
		wg     sync.WaitGroup
		failed atomic.Int32
	)
	for i := range dispatchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ids, err := claimOnce(db, fmt.Sprintf("d%d", i), 7)
				if err != nil {
					t.Errorf("claim by d%d = %v", i, err)
					failed.Add(1)
					return
				}
				if len(ids) == 0 {
					return
				}
				mu.Lock()
				for _, id := range ids {
					seen[id]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		return
	}
	if len(seen) != events {
		t.Errorf("dispatchers claimed %d distinct events; want all %d", len(seen), events)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("event %s claimed %d times under one lease; want once", id, n)
		}
	}
}

// claimOnce runs the dialect's claim statement directly, with a lease
// longer than the test.
func claimOnce(db *sql.DB, owner string, batch int) ([]string, error) {
	now := time.Now()
	rows, err := db.Query(outbox.PostgreSQL.Claim, owner, now.Add(time.Hour).UnixNano(), now.UnixNano(), batch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var (
			id, topic      string
			payload        []byte
			attempts       int
			created, until int64
		)
		if err := rows.Scan(&id, &topic, &payload, &attempts, &created, &until); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// TestPostgresDispatchers: four dispatchers share the outbox; every event
// is delivered once (no failures, long leases), in enqueue order per
// dispatcher, and applied once through the inbox.
func TestPostgresDispatchers(t *testing.T) {
	db := pgDB(t)
	const events = 120
	ids := pgEnqueue(t, db, events)
	order := map[string]int{}
	for i, id := range ids {
		order[id] = i
	}
	var (
		deliveries [events]atomic.Int32
		total      atomic.Int32
		mu         sync.Mutex // guards last
		last       = map[string]int{}
		inbox      = outbox.Inbox{Consumer: "billing"}
	)
	deliver := func(owner string) func(ctx context.Context, e outbox.Event) error {
		return func(ctx context.Context, e outbox.Event) error {
			n, ok := order[e.ID]
			if !ok {
				return fmt.Errorf("unknown event %s", e.ID)
			}
			mu.Lock()
			if prev, ok := last[owner]; ok && n < prev {
				t.Errorf("dispatcher %s delivered event #%d after #%d", owner, n, prev)
			}
			last[owner] = n
			mu.Unlock()
			deliveries[n].Add(1)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if _, err := inbox.Apply(ctx, tx, e.ID); err != nil {
				return err
			}
			if err := tx.Commit(); err != nil {
				return err
			}
			total.Add(1)
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 4 {
		owner := fmt.Sprintf("d%d", i)
		d := &outbox.Dispatcher{DB: db, Dialect: outbox.PostgreSQL, Owner: owner, Deliver: deliver(owner),
			Batch: 5, Poll: 10 * time.Millisecond, Logger: quiet()}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for total.Load() < events && ctx.Err() == nil {
				if _, err := d.DeliverDue(ctx); err != nil {
					t.Errorf("DeliverDue(%s) = %v", owner, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range deliveries {
		if n := deliveries[i].Load(); n != 1 {
			t.Errorf("event #%d delivered %d times; want once", i, n)
		}
	}
	if got := count(t, db, `SELECT count(*) FROM mcpledger_outbox WHERE delivered_at IS NULL`); got != 0 {
		t.Errorf("%d events left undelivered; want 0", got)
	}
	if got := count(t, db, `SELECT count(*) FROM mcpledger_inbox WHERE consumer = 'billing'`); got != events {
		t.Errorf("inbox holds %d applied events; want %d", got, events)
	}
}

func pgEnqueue(t *testing.T, db *sql.DB, n int) []string {
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
			t.Fatalf("Enqueue = %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}
