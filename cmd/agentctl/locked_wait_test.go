package main

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// countedStore counts the writes that reach the ledger under agentctl's
// cliStore.
type countedStore struct {
	ledger.Store
	ledger.EventLog
	writes atomic.Int32
}

func (s *countedStore) Claim(ctx context.Context, req ledger.ClaimRequest) (ledger.Claim, error) {
	s.writes.Add(1)
	return s.Store.Claim(ctx, req)
}

func (s *countedStore) Transition(ctx context.Context, t ledger.Transition) (*ledger.Record, error) {
	s.writes.Add(1)
	return s.Store.Transition(ctx, t)
}

func (s *countedStore) AppendEvents(ctx context.Context, events []ledger.Event) error {
	s.writes.Add(1)
	return s.EventLog.AppendEvents(ctx, events)
}

// --wait bounds a command's wait for a locked ledger in all: once one
// write waited it out, the command's other writes (its call events as it
// closes, a transition, writes queued at the same moment) fail with that
// error without reaching the ledger, so none waits again.
func TestLockedLedgerIsWaitedOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := sqlite.Open(ctx, path, &sqlite.Options{BusyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	holdLock(t, path)

	counted := &countedStore{Store: st, EventLog: st}
	a := &app{}
	a.busy.slot = make(chan struct{}, 1)
	w := a.timed(counted)
	events, ok := w.(ledger.EventLog)
	if !ok {
		t.Fatal("the wrapped ledger lost its event log")
	}
	id := ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "w-1"}

	// The claim and a write queued beside it, as a call's goroutines do.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() {
		_, errs[0] = w.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "me"})
	})
	wg.Go(func() {
		errs[1] = events.AppendEvents(ctx, []ledger.Event{{Tenant: id.Tenant, Tool: id.Tool, Side: ledger.SideClient, Outcome: ledger.OutcomeSucceeded, At: time.Now()}})
	})
	wg.Wait()
	_, terr := w.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "me"})
	for i, err := range append(errs, terr) {
		if !errors.Is(err, sqlite.ErrBusy) {
			t.Errorf("write #%d on a locked ledger = %v; want ErrBusy", i, err)
		}
	}
	if n := counted.writes.Load(); n != 1 {
		t.Errorf("writes that reached the locked ledger = %d; want 1 (each of the others would wait --wait again)", n)
	}
}
