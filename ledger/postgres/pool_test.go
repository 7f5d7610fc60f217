package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// TestPoolExhausted: with every pooled connection busy, an operation waits
// for one up to AcquireTimeout and then fails with ErrPoolTimeout; it never
// waits without end. Operations already holding a connection end with
// their context. Once the load is gone the store works again.
func TestPoolExhausted(t *testing.T) {
	url := pgtest.Schema(t)
	const poolSize = 2
	st := open(t, url, &postgres.Options{MaxConns: poolSize, AcquireTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	id := ledger.ID{Tenant: "t", Tool: "pay", Key: "k"}
	if _, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "o"}); err != nil {
		t.Fatal(err)
	}

	// Another session locks the table: every statement of the store blocks
	// inside the database while holding its pooled connection.
	locker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE records IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}

	const callers = 8
	opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.Get(opCtx, id)
		}()
	}
	// The table stays locked until they give up: a caller that ignored
	// its context would hang here, so a guard ends the wait and the test.
	gaveUp := make(chan struct{})
	go func() { wg.Wait(); close(gaveUp) }()
	select {
	case <-gaveUp:
	case <-time.After(2 * time.Minute):
		_ = tx.Rollback(ctx)
		t.Fatal("callers of an exhausted pool still wait 2 minutes after their 3s context ended; want each to give up with it")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	var timeouts, deadlines int
	for i, err := range errs {
		switch {
		case errors.Is(err, postgres.ErrPoolTimeout):
			timeouts++
		case errors.Is(err, context.DeadlineExceeded):
			deadlines++
		default:
			t.Errorf("Get #%d under an exhausted pool = %v; want ErrPoolTimeout or the context's deadline", i, err)
		}
	}
	if timeouts != callers-poolSize || deadlines != poolSize {
		t.Errorf("got %d pool timeouts and %d context deadlines; want %d and %d", timeouts, deadlines, callers-poolSize, poolSize)
	}

	// The pool recovers: connections cancelled mid-statement are replaced.
	if _, err := st.Get(ctx, id); err != nil {
		t.Fatalf("Get after the load = %v; want the record", err)
	}
}

// TestPoolWaits: more callers than connections, none holding one for long:
// they queue for connections and all succeed.
func TestPoolWaits(t *testing.T) {
	st := open(t, pgtest.Schema(t), &postgres.Options{MaxConns: 2, AcquireTimeout: 30 * time.Second})
	ctx := context.Background()
	const callers = 64
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := ledger.ID{Tenant: "t", Tool: "pay", Key: fmt.Sprintf("k-%d", i)}
			_, errs[i] = st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "o"})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Claim(%q) with a queue for 2 connections = %v; want success", fmt.Sprintf("k-%d", i), err)
		}
	}
}
