package sqlite

import (
	"context"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// watcher is the wake-up channel shared by the waiters of one record. The
// writer closes it after committing a change to the record, so in-process
// waiters wake at once instead of polling.
type watcher struct {
	ch chan struct{}
	n  int // waiters holding ch; the entry is dropped at zero
}

// watch returns the channel closed by the next change of id. The caller
// must call unwatch(id) once done with it.
func (s *Store) watch(id ledger.ID) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.watchers[id]
	if w == nil {
		w = &watcher{ch: make(chan struct{})}
		s.watchers[id] = w
	}
	w.n++
	return w.ch
}

func (s *Store) unwatch(id ledger.ID, ch <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.watchers[id]
	// After a wake the entry may already belong to a newer channel.
	if w == nil || w.ch != ch {
		return
	}
	w.n--
	if w.n == 0 {
		delete(s.watchers, id)
	}
}

// wake releases every waiter of id; later waiters get a fresh channel.
func (s *Store) wake(id ledger.ID) {
	s.mu.Lock()
	w := s.watchers[id]
	delete(s.watchers, id)
	s.mu.Unlock()
	if w != nil {
		close(w.ch)
	}
}

func (s *Store) wakeAll() {
	s.mu.Lock()
	ws := s.watchers
	s.watchers = make(map[ledger.ID]*watcher)
	s.mu.Unlock()
	for _, w := range ws {
		close(w.ch)
	}
}

// Wait implements ledger.Store. A change made through this Store wakes the
// waiter immediately; a change made by another process is seen by
// re-reading the record with a backoff from PollInterval to
// MaxPollInterval.
func (s *Store) Wait(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	delay := s.opts.PollInterval
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var last *ledger.Record
	for {
		// Watch before reading, so a change committed between the read
		// and the select still wakes us.
		ch := s.watch(id)
		r, err := s.Get(ctx, id)
		if err != nil {
			s.unwatch(id, ch)
			if last != nil && ctx.Err() != nil {
				return last, ctx.Err()
			}
			return nil, err
		}
		last = r
		if !r.State.Waiting() {
			s.unwatch(id, ch)
			return r, nil
		}
		if timer == nil {
			timer = time.NewTimer(delay)
		} else {
			timer.Reset(delay)
		}
		if s.waitHook != nil {
			s.waitHook(id)
		}
		select {
		case <-ch:
		case <-timer.C:
			delay = min(2*delay, s.opts.MaxPollInterval)
		case <-ctx.Done():
			s.unwatch(id, ch)
			return last, ctx.Err()
		}
		s.unwatch(id, ch)
	}
}
