// Package outbox is a transactional outbox and inbox for tool handlers whose
// downstream has no idempotency of its own. A handler writes its business
// rows and an event in one transaction, so the event exists exactly when the
// rows do; a [Dispatcher] delivers events at least once, with backoff, across
// restarts; a consumer applies each event once through an [Inbox] in its own
// transaction.
//
//	tx, err := db.BeginTx(ctx, nil)
//	// ... INSERT INTO payments ...
//	id, err := outbox.Enqueue(ctx, tx, "payment.created", payload)
//	err = tx.Commit()
//	d.Notify() // deliver now rather than at the next poll
//
//	d := &outbox.Dispatcher{DB: db, Deliver: send}
//	go d.Run(ctx)
//
//	// consumer side, in its own database:
//	tx, err := cdb.BeginTx(ctx, nil)
//	fresh, err := outbox.Inbox{}.Apply(ctx, tx, e.ID)
//	if fresh { /* apply the effect */ }
//	err = tx.Commit()
//
// [Migrate] and [MigrateInbox] create the tables. SQL is written once with
// $1-style placeholders, which SQLite and PostgreSQL both accept; what
// differs (the schema, and the atomic claim, which PostgreSQL does with FOR
// UPDATE SKIP LOCKED) lives in a [Dialect].
package outbox
