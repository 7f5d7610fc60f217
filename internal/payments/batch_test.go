package payments_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
)

// Payments that share a batch (one transaction, a savepoint each) stay
// apart: the ones the daily limit refuses leave no row and no event, and
// each of the others is there once, with its event.
func TestConcurrentPaymentsKeepTheLimit(t *testing.T) {
	const (
		callers = 48
		cents   = 100
		fit     = 30 // payments of cents the payee may receive today
	)
	app := open(t, payments.Config{DailyLimitCents: fit * cents})
	ctx := context.Background()
	var paid, refused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		cs := connect(t, app) // a session each: the calls arrive together
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := pay(ctx, cs, fmt.Sprintf("batch-%d", i), cents, "carol")
			switch {
			case err != nil:
				errs <- fmt.Errorf("payment %d: %w", i, err)
			case res.IsError:
				refused.Add(1)
			default:
				paid.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if paid.Load() != fit || refused.Load() != callers-fit {
		t.Errorf("paid %d, refused %d; want %d and %d", paid.Load(), refused.Load(), fit, callers-fit)
	}
	if n := count(t, app, `SELECT count(*) FROM payments WHERE payee = 'carol'`); n != fit {
		t.Errorf("%d payments to carol; want %d", n, fit)
	}
	if n := count(t, app, `SELECT count(*) FROM mcpledger_outbox`); n != fit {
		t.Errorf("%d events; want %d (one per payment, none for a refused one)", n, fit)
	}
}

// reached signals each fault hook line written to it.
type reached chan struct{}

func (r reached) Write(p []byte) (int, error) {
	r <- struct{}{}
	return len(p), nil
}

// A payment whose caller gives up while it waits behind another is never
// written, and the writer goes on with the payments after it.
func TestAbandonedPaymentIsNotWritten(t *testing.T) {
	hook := make(reached, 1)
	faults := payments.Faults{payments.FaultHandler: "hang"}
	app := open(t, payments.Config{Faults: faults, FaultWriter: hook})
	first, second := connect(t, app), connect(t, app)
	ctx := context.Background()
	fctx, release := context.WithCancel(ctx)
	defer release()
	done := make(chan error, 1)
	go func() {
		_, err := pay(fctx, first, "hung-1", 100, "dave")
		done <- err
	}()
	<-hook // the first payment holds the writer, hung before its commit
	id := ledger.ID{Tenant: server.DefaultTenant, Layer: ledger.LayerServer, Tool: payments.ToolCreate, Key: "abandoned-1"}
	sctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	abandoned := make(chan error, 1)
	go func() {
		_, err := pay(sctx, second, "abandoned-1", 100, "dave")
		abandoned <- err
	}()
	// The caller gives up once the guard has claimed the key: from then
	// on its handler waits behind the hung payment.
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := claimed(wctx, app.Ledger(), id); err != nil {
		t.Fatalf("waiting for the second payment's claim: %v", err)
	}
	giveUp()
	if err := <-abandoned; !errors.Is(err, context.Canceled) {
		t.Fatalf("a payment whose caller gave up = %v; want its context's error", err)
	}
	// The server learns of the cancellation on its own time; until its
	// handler has given the payment up, the writer may still take it.
	// The guard's record leaves PROCESSING when the handler returns.
	rec, err := app.Ledger().Wait(wctx, id)
	if err != nil {
		t.Fatalf("waiting for the abandoned call's record: %v", err)
	}
	if rec.State != ledger.StateRetryable {
		t.Errorf("the abandoned call's record is %s; want %s (nothing ran)", rec.State, ledger.StateRetryable)
	}
	release()
	if err := <-done; err == nil {
		t.Fatal("the hung payment's call answered after it was cancelled; want an error")
	}
	// Disarmed after both calls ended: the next handler reads the map
	// only after this call has returned.
	delete(faults, payments.FaultHandler)
	if res, err := pay(ctx, second, "after-1", 100, "dave"); err != nil || res.IsError {
		t.Fatalf("a payment after them = %v, %v; want it paid", res, err)
	}
	for key, want := range map[string]int{"hung-1": 0, "abandoned-1": 0, "after-1": 1} {
		if n := count(t, app, `SELECT count(*) FROM payments WHERE idempotency_key = $1`, key); n != want {
			t.Errorf("%d payments for %s; want %d", n, key, want)
		}
	}
}

// claimed returns once the store holds a record of id, or ctx's error.
// Nothing announces a new record, so it reads again after each short
// pause; the pause paces the reads and decides no outcome.
func claimed(ctx context.Context, st ledger.Store, id ledger.ID) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := st.Get(ctx, id)
		if !errors.Is(err, ledger.ErrNotFound) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
