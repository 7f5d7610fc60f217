package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Write-behind outcomes (ledger.WriteBehind). In WAL mode a commit under
// synchronous=NORMAL is visible to every connection at once but is not
// fsynced; the next commit under FULL fsyncs the log up to its own end,
// earlier frames included. So a lazy batch switches the write connection
// to NORMAL for its commit, any other batch switches it back, and a timer
// makes sure a quiet store fsyncs within WriteBehindWindow. The log is
// written in order, so a machine crash can lose only a suffix of lazy
// commits, never a durable claim that came after them.

func allLazy(ops []*op) bool {
	for _, o := range ops {
		if !o.lazy {
			return false
		}
	}
	return true
}

// syncMode sets the write connection's synchronous pragma for the next
// batch. The caller owns the write connection.
func (s *Store) syncMode(w *wconn, lazy bool) error {
	if lazy == s.relaxed {
		return nil
	}
	mode := "FULL"
	if lazy {
		mode = "NORMAL"
	}
	if err := w.end("PRAGMA synchronous = " + mode); err != nil {
		return fmt.Errorf("sqlite: set synchronous=%s: %w", mode, s.classify(err))
	}
	s.relaxed = lazy
	return nil
}

// committed notes a batch that wrote: a durable one has fsynced every
// earlier commit too; a lazy one needs a flush within the window.
func (s *Store) committed(lazy bool) {
	if s.commitHook != nil {
		s.commitHook(lazy)
	}
	if !lazy {
		s.unsynced.Store(false)
		return
	}
	s.unsynced.Store(true)
	if s.flushing.CompareAndSwap(false, true) {
		time.AfterFunc(s.opts.WriteBehindWindow, func() {
			s.flushing.Store(false)
			if err := s.flush(); err != nil && !errors.Is(err, ErrClosed) {
				s.logger().Error("sqlite: outcomes written behind are not on disk yet; the next durable commit will write them", "path", s.path, "err", err)
			}
		})
	}
}

// flush makes written-behind commits durable with one durable commit that
// changes nothing: it rewrites the file's application id with its own
// value, which adds a log frame, so the commit fsyncs the log.
func (s *Store) flush() error {
	if !s.unsynced.Load() {
		return nil
	}
	return s.write(context.Background(), func(ctx context.Context, tx execer, _ time.Time) ([]ledger.ID, error) {
		// PRAGMA arguments cannot be bound; the value is our constant.
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID))
		return nil, err
	})
}
