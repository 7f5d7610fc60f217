package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Group commit. One goroutine at a time owns the write connection. A
// caller that finds it free runs its own op at once, on its own goroutine:
// a lone write pays no hand-off. Callers that arrive while it is busy queue
// their ops; when the owner is done it hands the queue to the writer
// goroutine, which runs whatever is queued in one transaction and commits
// it with one fsync, until the queue is empty. Each op of a batch runs
// inside its own savepoint, so an op that fails leaves the others of its
// batch intact, and each caller gets its own result.

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
	ctx context.Context
	fn  writeFunc
	// single marks an op whose first statement, when it changes anything,
	// is its whole write. Run alone, such an op may execute that statement
	// outside a transaction; see wconn.
	single bool
	// lazy marks a write that may be committed without an fsync (see
	// ledger.WriteBehind); a batch is committed lazily only when all of
	// its ops are lazy.
	lazy    bool
	state   atomic.Int32
	err     error
	changed []ledger.ID
	done    chan struct{}
}

// write runs fn through the writer and waits for its commit.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	return s.submit(ctx, &op{ctx: ctx, fn: fn})
}

// writeSingle is write for an op whose first statement, if it changes
// anything, is all it writes (see op.single).
func (s *Store) writeSingle(ctx context.Context, fn writeFunc) error {
	return s.submit(ctx, &op{ctx: ctx, fn: fn, single: true})
}

// writeSingleAs is writeSingle for an op that may be written behind when
// lazy is set.
func (s *Store) writeSingleAs(ctx context.Context, lazy bool, fn writeFunc) error {
	return s.submit(ctx, &op{ctx: ctx, fn: fn, single: true, lazy: lazy})
}

func (s *Store) submit(ctx context.Context, o *op) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o.done = make(chan struct{})
	s.wmu.Lock()
	if s.closed {
		s.wmu.Unlock()
		return ErrClosed
	}
	if !s.busy {
		// Nobody is writing: run the op here rather than wake the writer
		// goroutine and wait for it.
		s.busy = true
		s.wmu.Unlock()
		o.state.Store(opTaken)
		s.runBatch([]*op{o})
		s.release()
		return o.err
	}
	s.queue = append(s.queue, o)
	s.wmu.Unlock()
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

// writing reports whether a write is running or queued.
func (s *Store) writing() bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.busy
}

// release gives up the write connection, handing it to the writer
// goroutine when ops queued up meanwhile.
func (s *Store) release() {
	s.wmu.Lock()
	if len(s.queue) == 0 {
		s.busy = false
		s.idle.Broadcast()
		s.wmu.Unlock()
		return
	}
	s.wmu.Unlock()
	// busy stays set: ownership passes to the writer goroutine. Only the
	// owner sends, so the buffer of one never fills.
	s.kick <- struct{}{}
}

// writer is the goroutine that runs queued ops in batches.
func (s *Store) writer() {
	defer close(s.writerEnd)
	batch := make([]*op, 0, s.opts.MaxBatch)
	for {
		select {
		case <-s.kick:
		case <-s.quit:
			return
		}
		// Whatever queued while the previous batch was committing shares
		// the next commit.
		for {
			s.wmu.Lock()
			n := min(len(s.queue), cap(batch))
			if n == 0 {
				s.busy = false
				s.idle.Broadcast()
				s.wmu.Unlock()
				break
			}
			batch = append(batch[:0], s.queue[:n]...)
			rest := copy(s.queue, s.queue[n:])
			clear(s.queue[rest:])
			s.queue = s.queue[:rest]
			s.wmu.Unlock()
			s.runBatch(batch)
			// The ops hold their callers' contexts, and through them
			// whatever those carry (a server's whole session): the
			// array must not keep them once the batch is done.
			clear(batch)
		}
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
		if !o.state.CompareAndSwap(opQueued, opTaken) && o.state.Load() != opTaken {
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

// commitBatch runs the ops on the write connection. It returns an error
// only when the transaction as a whole failed; per-op errors are in op.err.
func (s *Store) commitBatch(ctx context.Context, ops []*op) error {
	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: write connection: %w", s.classify(err))
	}
	// Close only hands the connection back to the pool; what the batch
	// wrote and whether it committed is Raw's answer.
	defer func() { _ = conn.Close() }()
	return conn.Raw(func(dc any) error {
		c, err := rawConn(dc)
		if err != nil {
			return err
		}
		w := &wconn{c: c}
		lazy := s.opts.Synchronous == SyncFull && allLazy(ops)
		if err := s.syncMode(w, lazy); err != nil {
			return err
		}
		before := s.commits.Load()
		err = s.commitOn(ctx, w, ops)
		if err == nil && s.commits.Load() != before {
			s.committed(lazy)
		}
		if c.InTx() {
			// A failed COMMIT can leave the transaction open; the next
			// batch must start clean.
			err = errors.Join(err, w.end("ROLLBACK"))
		}
		return err
	})
}

func (s *Store) commitOn(ctx context.Context, w *wconn, ops []*op) error {
	if len(ops) == 1 {
		o := ops[0]
		if o.single {
			// Alone, the op's one write statement is its own transaction:
			// SQLite commits it, durably, as the statement completes. That
			// spares BEGIN and COMMIT. When it changed nothing and the op
			// goes on, it starts over inside a transaction.
			w.auto = true
			o.changed, o.err = o.fn(ctx, w, s.opts.Now())
			w.auto = false
			if !errors.Is(o.err, errNeedTx) {
				if o.err != nil {
					o.err = s.classify(o.err)
					o.changed = nil
				} else if w.wrote {
					s.commits.Add(1)
				}
				return nil
			}
			o.changed, o.err = nil, nil
		}
		// A lone op needs no savepoint: if it fails the whole transaction
		// rolls back, which also spares a commit.
		if err := w.begin(); err != nil {
			return fmt.Errorf("sqlite: begin write: %w", s.classify(err))
		}
		o.changed, o.err = o.fn(ctx, w, s.opts.Now())
		if o.err != nil {
			o.err = s.classify(o.err)
			o.changed = nil
			if err := w.end("ROLLBACK"); err != nil {
				return fmt.Errorf("sqlite: rollback: %w", s.classify(err))
			}
			return nil
		}
		return s.commit(w)
	}
	if err := w.begin(); err != nil {
		return fmt.Errorf("sqlite: begin write: %w", s.classify(err))
	}
	for _, o := range ops {
		if err := w.end("SAVEPOINT op"); err != nil {
			return fmt.Errorf("sqlite: savepoint: %w", s.classify(err))
		}
		o.changed, o.err = o.fn(ctx, w, s.opts.Now())
		if o.err != nil {
			o.err = s.classify(o.err)
			o.changed = nil
			if err := w.end("ROLLBACK TO op"); err != nil {
				return fmt.Errorf("sqlite: rollback to savepoint: %w", s.classify(err))
			}
		}
		if err := w.end("RELEASE op"); err != nil {
			return fmt.Errorf("sqlite: release savepoint: %w", s.classify(err))
		}
	}
	return s.commit(w)
}

func (s *Store) commit(w *wconn) error {
	if err := w.end("COMMIT"); err != nil {
		return fmt.Errorf("sqlite: commit: %w", s.classify(err))
	}
	s.commits.Add(1)
	return nil
}
