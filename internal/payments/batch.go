package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Group commit for the payments database. One goroutine runs every
// payment transaction, and every payment that queued while it committed
// the last batch goes into the next one: one transaction, a savepoint per
// payment, one commit (one fsync) for all of them. Handlers waiting for
// SQLite's write lock on connections of their own waited in its busy
// handler, which sleeps up to 100 ms between tries and lets whoever tries
// at the right moment in first: under load some calls waited seconds
// while others passed in milliseconds. And one transaction at a time,
// each a handful of statements with a goroutine switch after each, fell
// behind whenever many other goroutines were runnable (a hot key's
// replays): the writer waited for the CPU between every two statements.

// errWriterClosed answers the payments still queued when the App closes.
var errWriterClosed = errors.New("payments: closed before the payment was written")

// maxBatch bounds the payments of one transaction.
const maxBatch = 64

// writeFunc writes one payment inside the batch's transaction. ctx is the
// handler's (for its fault hooks); statements must not be given it, since
// a cancelled statement could roll back the whole batch's transaction.
type writeFunc func(ctx context.Context, tx *sql.Tx) error

// Job states: a handler whose context ends while its payment is queued
// abandons it, and the writer skips it, so its context error means
// nothing was written.
const (
	jobQueued int32 = iota
	jobTaken
	jobAbandoned
)

type job struct {
	ctx   context.Context
	fn    writeFunc
	state atomic.Int32
	err   error
	done  chan struct{}
}

// writer runs the payment transactions of an App.
type writer struct {
	db    *sql.DB
	jobs  chan *job
	quit  chan struct{}
	ended chan struct{}
	stop  sync.Once
}

func newWriter(db *sql.DB) *writer {
	w := &writer{db: db, jobs: make(chan *job, maxBatch), quit: make(chan struct{}), ended: make(chan struct{})}
	go w.run()
	return w
}

// do runs fn in the next batch and returns once that batch committed (nil)
// or failed (fn's error, or the batch's: nothing of it was written).
func (w *writer) do(ctx context.Context, fn writeFunc) error {
	j := &job{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case w.jobs <- j:
	case <-ctx.Done():
		return fmt.Errorf("payments: waiting for the database: %w", ctx.Err())
	case <-w.quit:
		return errWriterClosed
	}
	select {
	case <-j.done:
		return j.err
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobQueued, jobAbandoned) {
			return fmt.Errorf("payments: waiting for the database: %w", ctx.Err())
		}
		// Its batch is running: the outcome is on the way, and the
		// handler must not answer before it knows it.
		<-j.done
		return j.err
	}
}

func (w *writer) run() {
	defer close(w.ended)
	batch := make([]*job, 0, maxBatch)
	for {
		select {
		case j := <-w.jobs:
			batch = append(batch[:0], j)
		case <-w.quit:
			w.failQueued()
			return
		}
	more:
		for len(batch) < maxBatch {
			select {
			case j := <-w.jobs:
				batch = append(batch, j)
			default:
				break more
			}
		}
		w.commit(batch)
		// Each job holds its handler's context; the array reused for the
		// next batch must not keep them (and their sessions) alive.
		clear(batch)
	}
}

// failQueued answers what was queued when the writer stopped.
func (w *writer) failQueued() {
	for {
		select {
		case j := <-w.jobs:
			j.err = errWriterClosed
			close(j.done)
		default:
			return
		}
	}
}

// commit runs the live jobs of batch in one transaction.
func (w *writer) commit(batch []*job) {
	live := batch[:0:0]
	for _, j := range batch {
		if j.state.CompareAndSwap(jobQueued, jobTaken) {
			live = append(live, j)
			continue
		}
		close(j.done) // abandoned by its handler
	}
	if len(live) == 0 {
		return
	}
	err := w.commitOn(live)
	for _, j := range live {
		if err != nil && j.err == nil {
			j.err = err
		}
		close(j.done)
	}
}

// commitOn returns an error only when the transaction as a whole failed;
// a payment's own error is in its job.
func (w *writer) commitOn(live []*job) error {
	// The batch serves many handlers: no one handler's context may
	// cancel it.
	ctx := context.Background()
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("payments: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op; on an error path the error returned says why
	if len(live) == 1 {
		// Alone, a payment needs no savepoint: if it fails, the
		// transaction rolls back.
		if live[0].err = live[0].fn(live[0].ctx, tx); live[0].err != nil {
			return nil
		}
	} else {
		for _, j := range live {
			if _, err := tx.ExecContext(ctx, "SAVEPOINT payment"); err != nil {
				return fmt.Errorf("payments: savepoint: %w", err)
			}
			if j.err = j.fn(j.ctx, tx); j.err != nil {
				if _, err := tx.ExecContext(ctx, "ROLLBACK TO payment"); err != nil {
					return fmt.Errorf("payments: roll back one payment: %w", err)
				}
			}
			if _, err := tx.ExecContext(ctx, "RELEASE payment"); err != nil {
				return fmt.Errorf("payments: release savepoint: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("payments: commit: %w", err)
	}
	return nil
}

// close stops the writer once its batch in hand is written; payments
// still queued fail with errWriterClosed.
func (w *writer) close() {
	w.stop.Do(func() { close(w.quit) })
	<-w.ended
}
