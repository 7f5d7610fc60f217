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
	if b.gaveUp == nil {
		b.gaveUp = err
	}
	if b.first.IsZero() || start.Before(b.first) {
		b.first = start
	}
	if end.After(b.last) {
		b.last = end
	}
}

// busySpan is when the ledger writes that found the ledger locked waited.
type busySpan struct {
	mu          sync.Mutex // guards first, last and gaveUp; the client writes from its own goroutines
	first, last time.Time
	// gaveUp is the error of the first write that waited out --wait. The
	// writes after it fail with it at once: --wait bounds the command's
	// wait in all, not each statement's (a claim, then the call events
	// written at the end, would each wait it again).
	gaveUp error
	// lasting is set by commands that serve until stopped (proxy, serve,
	// ui): a lock that outlasted one request's wait must not fail every
	// later one.
	lasting bool
	// slot holds the one write of a command that runs (see write).
	slot chan struct{}
}

// given is the error of a write that already waited out --wait, or nil.
func (b *busySpan) given() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lasting {
		return nil
	}
	return b.gaveUp
}

func (b *busySpan) waited() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last.Sub(b.first)
}

// write runs one ledger write within the command's --wait: once a write
// waited that out, no other starts. The writes of a command run one at a
// time for that (the ledger has one writer connection anyway): a write
// queued in the store behind the one that gave up would be taken by its
// writer at once and wait the whole --wait again.
func (s *cliStore) write(ctx context.Context, fn func(context.Context) error) error {
	b := &s.a.busy
	if !b.lasting && b.slot != nil {
		select {
		case b.slot <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-b.slot }()
	}
	if err := b.given(); err != nil {
		return err
	}
	start := time.Now()
	err := fn(ctx)
	s.noteBusy(start, err)
	return err
}

func (s *cliStore) Claim(ctx context.Context, req ledger.ClaimRequest) (c ledger.Claim, err error) {
	err = s.write(ctx, func(ctx context.Context) error {
		c, err = s.Store.Claim(ctx, req)
		return err
	})
	if err == nil && c.Won && c.Record != nil && ledger.RowOf(c.Record.State).Waits == ledger.WaitsTool {
		s.a.awaitAnswer(req.Tool, req.Key)
	}
	return c, err
}

func (s *cliStore) Transition(ctx context.Context, t ledger.Transition) (r *ledger.Record, err error) {
	err = s.write(ctx, func(ctx context.Context) error {
		r, err = s.Store.Transition(ctx, t)
		return err
	})
	if err == nil && ledger.RowOf(t.To).Waits == ledger.WaitsTool && ledger.RowOf(t.From).Waits != ledger.WaitsTool {
		// Approved, or taken over: the call goes to the upstream now.
		s.a.awaitAnswer(t.ID.Tool, t.ID.Key)
	}
	return r, err
}

// awaitAnswer says on the status line that the call of tool under key
// now waits for the upstream's answer.
func (a *app) awaitAnswer(tool, key string) {
	if a.callee == "" {
		return // not agentctl call: nothing to say
	}
	a.status.set("waiting for %s to answer %s (key %s)…", a.callee, tool, key)
}

func (s *cliStore) ExpireLeases(ctx context.Context) (n int, err error) {
	err = s.write(ctx, func(ctx context.Context) error {
		n, err = s.Store.ExpireLeases(ctx)
		return err
	})
	return n, err
}

func (s *cliStore) Purge(ctx context.Context, p ledger.PurgeRequest) (n int, err error) {
	err = s.write(ctx, func(ctx context.Context) error {
		n, err = s.Store.Purge(ctx, p)
		return err
	})
	return n, err
}

func (s *eventStore) AppendEvents(ctx context.Context, events []ledger.Event) error {
	return s.write(ctx, func(ctx context.Context) error {
		return s.EventLog.AppendEvents(ctx, events)
	})
}

func (s *eventStore) PurgeEvents(ctx context.Context, before time.Time) (n int, err error) {
	err = s.write(ctx, func(ctx context.Context) error {
		n, err = s.EventLog.PurgeEvents(ctx, before)
		return err
	})
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
		a.status.set("recording the answer for %s (key %s)…", req.Tool, req.Key)
		return ans, err
	})
}

// confirmFunc is a Confirmer made of a function.
type confirmFunc func(ctx context.Context, req confirm.Request) (confirm.Answer, error)

func (f confirmFunc) Confirm(ctx context.Context, req confirm.Request) (confirm.Answer, error) {
	return f(ctx, req)
}
