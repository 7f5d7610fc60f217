package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// cliStore is the ledger as agentctl's commands use it. It times the
// writes (lease renewals aside: they retry on their own timer), so a locked
// ledger's error gives the wait that really happened,
// and it shows on the status line when a call waits for another process
// running the same operation.
type cliStore struct {
	ledger.Store
	a *app
}

// eventStore keeps a ledger's event log visible through the wrapper: the
// client records its call events, and ledger stats reads them, only from a
// store that has one.
type eventStore struct {
	*cliStore
	ledger.EventLog
}

// timed wraps st; see cliStore.
func (a *app) timed(st ledger.Store) ledger.Store {
	w := &cliStore{Store: st, a: a}
	if el, ok := st.(ledger.EventLog); ok {
		return &eventStore{cliStore: w, EventLog: el}
	}
	return w
}

// noteBusy records a write that found the ledger locked. One command may
// try several (a claim, then its call events as it closes), each waiting
// the busy timeout, some at once: the wait it reports is the span from the
// first such write's start to the last one's end.
func (s *cliStore) noteBusy(start time.Time, err error) {
	if !errors.Is(err, sqlite.ErrBusy) {
		return
	}
	end := time.Now()
	b := &s.a.busy
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.first.IsZero() || start.Before(b.first) {
		b.first = start
	}
	if end.After(b.last) {
		b.last = end
	}
}

// busySpan is when the ledger writes that found the ledger locked waited.
type busySpan struct {
	mu          sync.Mutex // guards first and last; the client writes from its own goroutines
	first, last time.Time
}

func (b *busySpan) waited() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last.Sub(b.first)
}

func (s *cliStore) Claim(ctx context.Context, req ledger.ClaimRequest) (ledger.Claim, error) {
	start := time.Now()
	c, err := s.Store.Claim(ctx, req)
	s.noteBusy(start, err)
	return c, err
}

func (s *cliStore) Transition(ctx context.Context, t ledger.Transition) (*ledger.Record, error) {
	start := time.Now()
	r, err := s.Store.Transition(ctx, t)
	s.noteBusy(start, err)
	return r, err
}

func (s *cliStore) ExpireLeases(ctx context.Context) (int, error) {
	start := time.Now()
	n, err := s.Store.ExpireLeases(ctx)
	s.noteBusy(start, err)
	return n, err
}

func (s *cliStore) Purge(ctx context.Context, p ledger.PurgeRequest) (int, error) {
	start := time.Now()
	n, err := s.Store.Purge(ctx, p)
	s.noteBusy(start, err)
	return n, err
}

func (s *eventStore) AppendEvents(ctx context.Context, events []ledger.Event) error {
	start := time.Now()
	err := s.EventLog.AppendEvents(ctx, events)
	s.noteBusy(start, err)
	return err
}

func (s *eventStore) PurgeEvents(ctx context.Context, before time.Time) (int, error) {
	start := time.Now()
	n, err := s.EventLog.PurgeEvents(ctx, before)
	s.noteBusy(start, err)
	return n, err
}

// Wait means that another caller (another process, as a CLI runs one
// call) owns the operation.
func (s *cliStore) Wait(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	s.a.status.set("waiting for another process running %s (key %s)…", id.Tool, id.Key)
	return s.Store.Wait(ctx, id)
}

// statusConfirmer clears the status line before a prompt takes the
// terminal: the prompt's own summary says that the call awaits
// confirmation.
func (a *app) statusConfirmer(c confirm.Confirmer) confirm.Confirmer {
	if a.status == nil || c == nil {
		return c
	}
	return confirmFunc(func(ctx context.Context, req confirm.Request) (confirm.Answer, error) {
		a.status.clear()
		ans, err := c.Confirm(ctx, req)
		a.status.set("calling %s…", req.Tool)
		return ans, err
	})
}

// confirmFunc is a Confirmer made of a function.
type confirmFunc func(ctx context.Context, req confirm.Request) (confirm.Answer, error)

func (f confirmFunc) Confirm(ctx context.Context, req confirm.Request) (confirm.Answer, error) {
	return f(ctx, req)
}
