package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "github.com/mattn/go-sqlite3"

	"github.com/mcpledger/mcpledger/outbox"
)

// A handler writes its row and its event in one transaction; the dispatcher
// delivers the event; the consumer applies it once even when it arrives
// twice.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "outbox-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "app.db")+"?_busy_timeout=5000&_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := outbox.Migrate(ctx, db, nil); err != nil {
		log.Fatal(err)
	}
	if err := outbox.MigrateInbox(ctx, db, nil); err != nil { // the consumer shares the file here
		log.Fatal(err)
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := outbox.Enqueue(ctx, tx, "payment.created", []byte(`{"payment_id":"pay_1"}`)); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}

	applied := 0
	consume := func(ctx context.Context, e outbox.Event) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		fresh, err := outbox.Inbox{Consumer: "ledger-sync"}.Apply(ctx, tx, e.ID)
		if err != nil {
			return err
		}
		if fresh {
			applied++
		}
		return tx.Commit()
	}
	d := &outbox.Dispatcher{DB: db, Deliver: func(ctx context.Context, e outbox.Event) error {
		fmt.Println("deliver", e.Topic, string(e.Payload))
		// Simulate an at-least-once redelivery.
		if err := consume(ctx, e); err != nil {
			return err
		}
		return consume(ctx, e)
	}}
	n, err := d.DeliverDue(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("delivered:", n, "applied:", applied)
	// Output:
	// deliver payment.created {"payment_id":"pay_1"}
	// delivered: 1 applied: 1
}
