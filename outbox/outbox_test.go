package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/outbox"
)

func TestEnqueueFollowsTheTransaction(t *testing.T) {
	tests := []struct {
		name   string
		commit bool
		want   int
	}{
		{"commit keeps the event", true, 1},
		{"rollback drops the event", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := producer(t, t.TempDir())
			ctx := context.Background()
			if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id TEXT PRIMARY KEY)`); err != nil {
				t.Fatal(err)
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id) VALUES ('o-1')`); err != nil {
				t.Fatal(err)
			}
			id, err := outbox.Enqueue(ctx, tx, "order.created", []byte(`{"id":"o-1"}`))
			if err != nil {
				t.Fatalf("Enqueue: %v", err)
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
			if got := count(t, db, `SELECT count(*) FROM orders`); got != tc.want {
				t.Errorf("orders = %d; want %d", got, tc.want)
			}
		})
	}
}

func TestEnqueueRejectsBadInput(t *testing.T) {
	db := producer(t, t.TempDir())
	ctx := context.Background()
	if _, err := outbox.Enqueue(ctx, nil, "t", nil); err == nil {
		t.Errorf("Enqueue(nil tx) = nil error; want an error")
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := outbox.Enqueue(ctx, tx, "", nil); err == nil {
		t.Errorf("Enqueue(empty topic) = nil error; want an error")
	}
}

func TestDispatcherRetriesWithBackoff(t *testing.T) {
	db := producer(t, t.TempDir())
	ids := enqueue(t, db, 5)
	var mu sync.Mutex
	tries := map[string]int{}
	d := &outbox.Dispatcher{
		DB: db, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Poll: 5 * time.Millisecond,
		Logger: quiet(),
		Deliver: func(ctx context.Context, e outbox.Event) error {
			mu.Lock()
			defer mu.Unlock()
			tries[e.ID]++
			if tries[e.ID] < 3 {
				return errors.New("downstream unavailable")
			}
			return nil
		},
	}
	runUntil(t, d, func() bool {
		return count(t, db, `SELECT count(*) FROM mcpledger_outbox WHERE delivered_at IS NULL`) == 0
	})
	for _, id := range ids {
		if got := count(t, db, `SELECT attempts FROM mcpledger_outbox WHERE id = $1`, id); got != 3 {
			t.Errorf("attempts of %s = %d; want 3 (two failures, one success)", id, got)
		}
	}
}

func TestDeadAfterMaxAttempts(t *testing.T) {
	db := producer(t, t.TempDir())
	enqueue(t, db, 1)
	d := &outbox.Dispatcher{
		DB: db, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxAttempts: 2, Logger: quiet(),
		Deliver: func(context.Context, outbox.Event) error { return errors.New("rejected") },
	}
	ctx := context.Background()
	for range 2 {
		waitDue(t, db)
		if _, err := d.DeliverDue(ctx); err == nil {
			t.Fatalf("DeliverDue with a failing downstream = nil error; want the failure")
		}
	}
	if got := count(t, db, `SELECT count(*) FROM mcpledger_outbox WHERE dead_at IS NOT NULL AND last_error = 'rejected'`); got != 1 {
		t.Errorf("dead events = %d; want 1", got)
	}
	if n, err := d.DeliverDue(ctx); n != 0 || err != nil {
		t.Errorf("DeliverDue after the event died = %d, %v; want 0, nil", n, err)
	}
}

func TestTwoDispatchersNeverHoldTheSameEvent(t *testing.T) {
	dir := t.TempDir()
	db := producer(t, dir)
	const events = 60
	enqueue(t, db, events)
	var mu sync.Mutex
	inFlight := map[string]bool{}
	delivered := map[string]int{}
	var overlaps atomic.Int64
	deliver := func(ctx context.Context, e outbox.Event) error {
		mu.Lock()
		if inFlight[e.ID] {
			overlaps.Add(1)
		}
		inFlight[e.ID] = true
		mu.Unlock()
		// Hand the CPU to the other dispatcher mid-delivery.
		for range 100 {
			runtimeGosched()
		}
		mu.Lock()
		delete(inFlight, e.ID)
		delivered[e.ID]++
		mu.Unlock()
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range 2 {
		// Separate connection pools, as two processes would have.
		d := &outbox.Dispatcher{DB: openDB(t, filepath.Join(dir, "app.db")), Deliver: deliver, Batch: 4,
			Poll: 5 * time.Millisecond, Owner: fmt.Sprintf("d%d", i), Logger: quiet()}
		wg.Go(func() { d.Run(ctx) })
	}
	waitFor(t, "every event delivered", 30*time.Second, func() bool {
		return count(t, db, `SELECT count(*) FROM mcpledger_outbox WHERE delivered_at IS NULL`) == 0
	})
	cancel()
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d deliveries overlapped another delivery of the same event; want 0", n)
	}
	if len(delivered) != events {
		t.Errorf("%d distinct events delivered; want %d", len(delivered), events)
	}
	for id, n := range delivered {
		if n != 1 {
			t.Errorf("event %s delivered %d times with no failure; want 1", id, n)
		}
	}
}

func TestInboxAppliesOnce(t *testing.T) {
	c := newConsumer(t, filepath.Join(t.TempDir(), "consumer.db"))
	ctx := context.Background()
	apply := func(in outbox.Inbox, id string, commit bool) bool {
		tx, err := c.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := in.Apply(ctx, tx, id)
		if err != nil {
			t.Fatalf("Apply(%q): %v", id, err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		return fresh
	}
	a, b := outbox.Inbox{Consumer: "a"}, outbox.Inbox{Consumer: "b"}
	steps := []struct {
		name   string
		in     outbox.Inbox
		id     string
		commit bool
		fresh  bool
	}{
		{"first delivery rolled back", a, "evt_1", false, true},
		{"redelivery after rollback is fresh", a, "evt_1", true, true},
		{"duplicate is not fresh", a, "evt_1", true, false},
		{"another consumer applies its own copy", b, "evt_1", true, true},
		{"another event is fresh", a, "evt_2", true, true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if got := apply(s.in, s.id, s.commit); got != s.fresh {
				t.Errorf("Apply(%q as %q) fresh = %v; want %v", s.id, s.in.Consumer, got, s.fresh)
			}
		})
	}
}
