package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// With polling set to once an hour, only the in-process notification can
// end the Wait in time.
func TestWaitIsWokenWithoutPolling(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, &sqlite.Options{PollInterval: time.Hour})
	blocked := make(chan struct{}, 1)
	sqlite.SetWaitHook(st, func(ledger.ID) {
		select {
		case blocked <- struct{}{}:
		default:
		}
	})
	req := claimReq("k1", "owner-1")
	claimed, err := st.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	type outcome struct {
		rec *ledger.Record
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := st.Wait(ctx, req.ID)
		done <- outcome{r, err}
	}()
	<-blocked // Wait has read PROCESSING and is blocked
	if _, err := st.Transition(ctx, ledger.Transition{ID: req.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: "owner-1", Fence: claimed.Record.Fence, Result: json.RawMessage(`{"ok":1}`)}); err != nil {
		t.Fatal(err)
	}
	// The poll is an hour away: only the Transition's wake-up can end the
	// Wait before ctx's deadline, a hang guard.
	o := <-done
	if o.err != nil || o.rec.State != ledger.StateSucceeded {
		t.Fatalf("Wait = %v, %v; want SUCCEEDED, woken by the Transition", o.rec, o.err)
	}
}

// Two Stores on one file share nothing in memory, exactly like two
// processes: the follower sees the change by polling.
func TestWaitPollsForOtherProcesses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	a, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlite.Open(ctx, path, &sqlite.Options{PollInterval: time.Millisecond, MaxPollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var polls atomic.Int32
	blocked := make(chan struct{}, 1)
	sqlite.SetWaitHook(b, func(ledger.ID) {
		if polls.Add(1) == 3 {
			blocked <- struct{}{}
		}
	})
	req := claimReq("k1", "owner-1")
	claimed, err := a.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan *ledger.Record, 1)
	go func() {
		r, err := b.Wait(ctx, req.ID)
		if err != nil {
			t.Errorf("Wait through the other store = %v", err)
		}
		done <- r
	}()
	<-blocked // b has polled a few times and still sees PROCESSING
	if _, err := a.Transition(ctx, ledger.Transition{ID: req.ID, From: ledger.StateProcessing, To: ledger.StateFailed, Owner: "owner-1", Fence: claimed.Record.Fence}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r == nil || r.State != ledger.StateFailed {
		t.Errorf("Wait through the other store = %v; want FAILED", r)
	}
}

// Concurrent writers share commits, and each still gets its own outcome:
// a reused key in the crowd fails alone.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, nil)
	if _, err := st.Claim(ctx, claimReq("taken", "owner-0")); err != nil {
		t.Fatal(err)
	}
	before := sqlite.Commits(st)
	const n = 64
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		won   atomic.Int32
		errs  [n + 1]error
	)
	for i := range n + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := claimReq(fmt.Sprintf("k%d", i), fmt.Sprintf("owner-%d", i))
			if i == n {
				r = claimReq("taken", "owner-x")
				r.Fingerprint = "fp-other"
			}
			c, err := st.Claim(ctx, r)
			errs[i] = err
			if err == nil && c.Won {
				won.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs[:n] {
		if err != nil {
			t.Errorf("Claim(k%d) = %v; want success", i, err)
		}
	}
	if !errors.Is(errs[n], ledger.ErrKeyReused) {
		t.Errorf("Claim(taken) with another fingerprint = %v; want ErrKeyReused", errs[n])
	}
	if won.Load() != n {
		t.Errorf("%d of %d distinct claims won; want all", won.Load(), n)
	}
	commits := sqlite.Commits(st) - before
	if commits >= n {
		t.Errorf("%d concurrent claims took %d commits; want fewer (group commit)", n, commits)
	}
	t.Logf("%d concurrent claims in %d commits", n, commits)
}
