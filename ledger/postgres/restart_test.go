package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// TestServerRestart restarts PostgreSQL (a private server, so other
// packages' tests are not disturbed) while workers claim and complete
// operations. Calls in flight either retry through the restart or fail
// with an error; no completed record is lost and no key executes twice.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	srv := pgtest.StartServer(t)
	cases := []struct {
		name         string
		reconnectFor time.Duration
		// wantAll: every operation completes (the store retried through
		// the restart); otherwise failures are allowed but must be errors.
		wantAll bool
	}{
		{"retry", 60 * time.Second, true},
		{"fail", -1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, err := pgtest.WithSearchPath(srv.URL, "restart_"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			st := open(t, url, &postgres.Options{MaxConns: 6, ReconnectFor: tc.reconnectFor})
			runRestart(t, srv, st, tc.wantAll)
		})
	}
	t.Run("down", func(t *testing.T) {
		url, err := pgtest.WithSearchPath(srv.URL, "restart_down")
		if err != nil {
			t.Fatal(err)
		}
		runDown(t, srv, open(t, url, &postgres.Options{ReconnectFor: 500 * time.Millisecond, AcquireTimeout: 2 * time.Second}))
	})
}

// TestServerRestart/down: while the server is stopped, calls fail with an
// error once ReconnectFor has passed, never hang; once it is back the same
// Store works again.
func runDown(t *testing.T, srv *pgtest.Server, st *postgres.Store) {
	ctx := context.Background()
	id := ledger.ID{Tenant: "t", Tool: "pay", Key: "down-1"}
	claimed, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "o"})
	if err != nil {
		t.Fatalf("Claim before the stop = %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			if err := srv.Start(); err != nil {
				t.Errorf("Start() = %v", err)
			}
		}
	}()
	// A store that retried past ReconnectFor would be ended by guard, a
	// hang guard far past the 500ms it is given.
	guard, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err = st.Transition(guard, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "o", Fence: claimed.Record.Fence})
	if err == nil {
		t.Fatal("Transition with the server stopped = nil error; want a connection error")
	}
	if guard.Err() != nil {
		t.Fatalf("Transition with the server stopped = %v after 2 minutes; want a connection error once ReconnectFor (500ms) passed", err)
	}
	if errors.Is(err, ledger.ErrLeaseLost) || errors.Is(err, ledger.ErrStateChanged) || errors.Is(err, postgres.ErrPoolTimeout) {
		t.Errorf("Transition with the server stopped = %v; want a connection error, not a ledger or pool error", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	rec, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "o", Fence: claimed.Record.Fence})
	if err != nil || rec.State != ledger.StateSucceeded {
		t.Fatalf("Transition after the server is back = %v, %v; want SUCCEEDED", rec, err)
	}
}

func runRestart(t *testing.T, srv *pgtest.Server, st *postgres.Store, wantAll bool) {
	const (
		keys    = 200
		workers = 8
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		executions [keys]atomic.Int32
		done       [keys]atomic.Bool // a worker saw Transition succeed
		progress   atomic.Int32
		restarting = make(chan struct{})
		restarted  = make(chan error, 1)
		mu         sync.Mutex // guards errs
		errs       []error
		after      atomic.Int32 // operations completed after the restart
	)
	go func() {
		<-restarting
		restarted <- srv.Restart()
	}()
	var once sync.Once
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w%d", w)
			// Two workers contend for every key.
			for i := w % (workers / 2); i < keys; i += workers / 2 {
				if progress.Add(1) == keys/4 {
					once.Do(func() { close(restarting) })
				}
				id := ledger.ID{Tenant: "t", Tool: "pay", Key: fmt.Sprintf("key-%03d", i)}
				c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: owner, Lease: time.Minute})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				if !c.Won {
					continue
				}
				executions[i].Add(1)
				_, err = st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
					Owner: owner, Fence: c.Record.Fence, AddAttempts: 1, Result: json.RawMessage(fmt.Sprintf(`{"key":%d}`, i))})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				done[i].Store(true)
				select {
				case <-restarted:
					// Put it back for the others; count work after it.
					restarted <- nil
					after.Add(1)
				default:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-restarted:
		if err != nil {
			t.Fatalf("Restart() = %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the restart never finished")
	}

	for _, err := range errs {
		if errors.Is(err, ledger.ErrKeyReused) || errors.Is(err, ledger.ErrStateChanged) || errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("operation failed with a ledger error, not a connection error: %v", err)
		}
	}
	if wantAll && len(errs) > 0 {
		t.Errorf("%d operations failed across the restart; want none (they retry). First: %v", len(errs), errs[0])
	}
	if !wantAll {
		t.Logf("%d operations failed clearly during the restart, e.g. %v", len(errs), first(errs))
	}
	for i := range keys {
		key := fmt.Sprintf("key-%03d", i)
		if n := executions[i].Load(); n > 1 {
			t.Errorf("key %q executed %d times; want at most once", key, n)
		}
		rec, err := st.Get(ctx, ledger.ID{Tenant: "t", Tool: "pay", Key: key})
		switch {
		case done[i].Load() && err != nil:
			t.Errorf("Get(%q) after the restart = %v; the completed record was lost", key, err)
		case done[i].Load() && (rec.State != ledger.StateSucceeded || string(rec.Result) != fmt.Sprintf(`{"key":%d}`, i)):
			t.Errorf("Get(%q) after the restart = %s %s; want SUCCEEDED {\"key\":%d}", key, rec.State, rec.Result, i)
		case wantAll && !done[i].Load():
			t.Errorf("key %q never completed", key)
		}
	}
	// A second round after the restart: a key whose claim was lost with
	// its connection may hold an orphaned PROCESSING record; claiming it
	// again must follow that record, never run the call a second time.
	for i := range keys {
		id := ledger.ID{Tenant: "t", Tool: "pay", Key: fmt.Sprintf("key-%03d", i)}
		c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "late", Lease: time.Minute})
		if err != nil {
			t.Fatalf("Claim(%q) after the restart = %v", id.Key, err)
		}
		if c.Won {
			executions[i].Add(1)
		}
		if n := executions[i].Load(); n > 1 {
			t.Errorf("key %q executed %d times after a second claim; want at most once", id.Key, n)
		}
	}
	if wantAll && after.Load() == 0 {
		t.Errorf("no operation completed after the restart; the test did not exercise recovery")
	}
}

func first(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}
