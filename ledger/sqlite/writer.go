package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Group commit. Every write is an op handed to one writer goroutine, which
// runs whatever ops are queued in one transaction and commits them with one
// fsync. Each op runs inside its own savepoint, so an op that fails leaves
// the others of its batch intact, and each caller gets its own result.

// writeFunc performs one op inside the batch transaction. now is the
// store's clock read for this op. It returns the records it changed, whose
// waiters are woken once the batch has committed.
type writeFunc func(ctx context.Context, tx execer, now time.Time) (changed []ledger.ID, err error)

// op states: a caller whose context ends first abandons a queued op, and
// the writer skips it, so a context error always means nothing was written.
const (
	opQueued int32 = iota
	opTaken
	opAbandoned
)

type op struct {
	ctx     context.Context
	fn      writeFunc
	state   atomic.Int32
	err     error
	changed []ledger.ID
	done    chan struct{}
}

// write runs fn through the writer and waits for its commit.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &op{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case s.ops <- o:
	case <-s.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-o.done:
		return o.err
	case <-ctx.Done():
		if o.state.CompareAndSwap(opQueued, opAbandoned) {
			return ctx.Err()
		}
		// The op is running: its outcome is on the way and must not be
		// lost, or the caller could not tell a claim it won from none.
		<-o.done
		return o.err
	}
}

// writer is the goroutine that owns the write connection.
func (s *Store) writer() {
	defer close(s.writerEnd)
	batch := make([]*op, 0, s.opts.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case o := <-s.ops:
			batch = append(batch, o)
		case <-s.quit:
			return
		}
		// Take whatever else is already waiting: those callers arrived
		// while the previous batch was committing and share this commit.
	drain:
		for len(batch) < cap(batch) {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		s.runBatch(batch)
	}
}

func (s *Store) runBatch(batch []*op) {
	live := batch[:0:0]
	for _, o := range batch {
		if o.ctx.Err() != nil && o.state.CompareAndSwap(opQueued, opAbandoned) {
			o.err = o.ctx.Err()
			close(o.done)
			continue
		}
		if !o.state.CompareAndSwap(opQueued, opTaken) {
			close(o.done) // abandoned by its caller
			continue
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return
	}
	// The batch serves many callers; one caller's context must not cancel
	// the others' transaction.
	ctx := context.Background()
	err := s.commitBatch(ctx, live)
	for _, o := range live {
		if err != nil && o.err == nil {
			o.err = err
			o.changed = nil
		}
		if o.err == nil {
			for _, id := range o.changed {
				s.wake(id)
			}
		}
		close(o.done)
	}
}

// commitBatch runs the ops in one transaction. It returns an error only
// when the transaction as a whole failed; per-op errors are in op.err.
func (s *Store) commitBatch(ctx context.Context, ops []*op) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin write: %w", s.classify(err))
	}
	// A lone op needs no savepoint: if it fails the whole transaction
	// rolls back, which also spares a commit.
	if len(ops) == 1 {
		o := ops[0]
		o.changed, o.err = o.fn(ctx, tx, s.opts.Now())
		if o.err != nil {
			o.err = s.classify(o.err)
			if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
				return fmt.Errorf("sqlite: rollback: %w", s.classify(rbErr))
			}
			return nil
		}
		return s.commit(tx)
	}
	for _, o := range ops {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT op"); err != nil {
			return errors.Join(fmt.Errorf("sqlite: savepoint: %w", s.classify(err)), tx.Rollback())
		}
		o.changed, o.err = o.fn(ctx, tx, s.opts.Now())
		if o.err != nil {
			o.err = s.classify(o.err)
			o.changed = nil
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
				return errors.Join(fmt.Errorf("sqlite: rollback to savepoint: %w", s.classify(err)), tx.Rollback())
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE op"); err != nil {
			return errors.Join(fmt.Errorf("sqlite: release savepoint: %w", s.classify(err)), tx.Rollback())
		}
	}
	return s.commit(tx)
}

func (s *Store) commit(tx *sql.Tx) error {
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", s.classify(err))
	}
	s.commits.Add(1)
	return nil
}

// execer is what the write helpers need from a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
