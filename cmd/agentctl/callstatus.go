package main

import (
	"context"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
)

// watchedStore is the ledger as call uses it: a Wait means another process
// runs the same operation, which the status line says while it lasts.
type watchedStore struct {
	ledger.Store
	a    *app
	tool string
}

func (w *watchedStore) Wait(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	w.a.status.set("waiting for another process running %s (key %s)…", w.tool, id.Key)
	return w.Store.Wait(ctx, id)
}

// watchedEventStore keeps a ledger's event log visible through the
// wrapper: the client records its call events only in a store that has one.
type watchedEventStore struct {
	*watchedStore
	ledger.EventLog
}

// watchStore wraps st for the status line; without one it is st itself.
func (a *app) watchStore(st ledger.Store, tool string) ledger.Store {
	if a.status == nil {
		return st
	}
	w := &watchedStore{Store: st, a: a, tool: tool}
	if el, ok := st.(ledger.EventLog); ok {
		return &watchedEventStore{watchedStore: w, EventLog: el}
	}
	return w
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
