package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

// Wait blocks until the record leaves PROCESSING and PENDING_APPROVAL and
// returns it. Writers in this process wake it directly; writers in other
// processes wake it through LISTEN/NOTIFY; a bounded poll covers a lost
// notification or a listener that is reconnecting. When ctx ends first Wait
// returns the latest record it saw and ctx's error.
func (s *Store) Wait(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if s.portable {
		return s.pollWait(ctx, id)
	}
	s.lis.start()
	w := s.waiters.add(notifyPayload(id))
	defer s.waiters.remove(w)

	poll := s.pollMin
	var (
		last    *ledger.Record
		watched bool
	)
	for {
		// Registered before reading: a change committed after this read
		// finds the waiter and its signal is kept in the buffered channel.
		rec, err := s.Get(ctx, id)
		if err != nil {
			if ctx.Err() != nil && last != nil {
				return last, ctx.Err()
			}
			return last, err
		}
		last = rec
		if hook := testHookWaitRead.Load(); hook != nil {
			(*hook)(rec)
		}
		if !rec.State.Waiting() {
			return rec, nil
		}
		if !watched {
			ok, err := s.watch(ctx, id)
			if err != nil {
				if ctx.Err() != nil {
					return last, ctx.Err()
				}
				return last, err
			}
			if !ok {
				continue // settled meanwhile: read it
			}
			watched = true
		}
		wait := poll
		if s.lis.healthy() {
			// Notifications flow: the poll only guards against one lost.
			wait = s.pollMax
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return last, ctx.Err()
		case <-w.ch:
			t.Stop()
		case <-t.C:
			poll = min(2*poll, s.pollMax)
		}
	}
}

// testHookWaitRead, when set by a test, sees every record Wait reads.
var testHookWaitRead atomic.Pointer[func(*ledger.Record)]

// settled wakes the followers of id: those of this Store at once, those of
// other processes, when any said they wait (watched), through a
// notification.
func (s *Store) settled(id ledger.ID, watched bool) {
	p := notifyPayload(id)
	s.waiters.wake(p)
	if watched && !s.portable {
		s.lis.publish(p)
	}
}

// watch marks a waiting record as watched, so that whoever settles it
// notifies. It reports false when the record no longer waits. The mark and
// the settling write lock the same row, so either the writer sees the mark
// or this update sees the record settled: no notification is lost between
// them. The mark is a hint (the poll still runs), so its commit does not
// wait for the disk.
func (s *Store) watch(ctx context.Context, id ledger.ID) (bool, error) {
	var n int64
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			tag, err := c.Exec(ctx, `UPDATE records SET watched = true
				FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
				WHERE tenant = $1 AND layer = $2 AND tool = $3 AND key = $4 AND state IN ('PROCESSING', 'PENDING_APPROVAL')`,
				id.Tenant, id.Layer, id.Tool, id.Key)
			n = tag.RowsAffected()
			return err
		})
	})
	if err != nil {
		return false, fmt.Errorf("postgres: wait: %w", err)
	}
	return n == 1, nil
}

// waiter is one Wait call's registration.
type waiter struct {
	key string
	ch  chan struct{} // buffered 1: a wake-up is never lost, never blocks
}

// waiters routes wake-ups, by notification payload, to the Wait calls of
// this Store.
type waiters struct {
	mu sync.Mutex // guards byKey
	// byKey maps a notification payload to the waiters of that record.
	byKey map[string]map[*waiter]struct{}
}

func newWaiters() *waiters {
	return &waiters{byKey: make(map[string]map[*waiter]struct{})}
}

func (ws *waiters) add(key string) *waiter {
	w := &waiter{key: key, ch: make(chan struct{}, 1)}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	set := ws.byKey[key]
	if set == nil {
		set = make(map[*waiter]struct{})
		ws.byKey[key] = set
	}
	set[w] = struct{}{}
	return w
}

func (ws *waiters) remove(w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	set := ws.byKey[w.key]
	delete(set, w)
	if len(set) == 0 {
		delete(ws.byKey, w.key)
	}
}

func (ws *waiters) wake(key string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.byKey[key] {
		signal(w.ch)
	}
}

// wakeAll makes every waiter re-read its record: used when notifications
// may have been missed (the listener reconnected).
func (ws *waiters) wakeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, set := range ws.byKey {
		for w := range set {
			signal(w.ch)
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
