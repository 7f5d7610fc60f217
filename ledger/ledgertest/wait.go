package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// waitBound caps how long a Wait that should return may take: generous for
// a slow machine, far below a test timeout.
const waitBound = 10 * time.Second

type waited struct {
	rec *ledger.Record
	err error
}

// startWait runs Wait in a goroutine and returns where its outcome lands.
func (e *env) startWait(ctx context.Context, i ledger.ID) <-chan waited {
	ch := make(chan waited, 1)
	go func() {
		r, err := e.st.Wait(ctx, i)
		ch <- waited{r, err}
	}()
	return ch
}

func (e *env) awaitWait(ch <-chan waited) waited {
	e.t.Helper()
	select {
	case w := <-ch:
		return w
	case <-time.After(waitBound):
		e.t.Fatalf("Wait did not return within %v of the record settling", waitBound)
		return waited{}
	}
}

func testWait(t *testing.T, newStore NewStore) {
	t.Run("Completion", func(t *testing.T) {
		e := newEnv(t, newStore)
		claimed := e.mustClaim(req("k1", "owner-1"))
		const waiters = 8
		var chans []<-chan waited
		for range waiters {
			chans = append(chans, e.startWait(e.ctx, id("k1")))
		}
		result := json.RawMessage(`{"content":[{"type":"text","text":"pay_1"}]}`)
		done := e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: "owner-1", Fence: claimed.Fence, Result: result, AddAttempts: 1})
		for i, ch := range chans {
			w := e.awaitWait(ch)
			if w.err != nil {
				t.Fatalf("Wait(%q) #%d = %v; want the settled record", "k1", i, w.err)
			}
			if d := diff(w.rec, done); d != "" {
				t.Errorf("Wait(%q) #%d returned: %s", "k1", i, d)
			}
		}
	})

	t.Run("ThroughApproval", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.NeedsApproval = true
		claimed := e.mustClaim(r)
		ch := e.startWait(e.ctx, id("k1"))
		e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StatePendingApproval, To: ledger.StateProcessing, Owner: "owner-1",
			Fence: claimed.Fence, Approval: &ledger.Approval{Decision: ledger.DecisionApproved, By: "alice", At: e.clock.Now()}})
		e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "owner-1",
			Fence: claimed.Fence, Result: json.RawMessage(`{}`)})
		w := e.awaitWait(ch)
		if w.err != nil || stateOf(w.rec) != ledger.StateSucceeded {
			t.Errorf("Wait(%q) across approval and execution = %s, %v; want SUCCEEDED (PROCESSING is still waiting)", "k1", stateOf(w.rec), w.err)
		}
	})

	t.Run("LeaseExpiry", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.Lease = time.Second
		e.mustClaim(r)
		ch := e.startWait(e.ctx, id("k1"))
		e.clock.Advance(time.Second)
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
			t.Fatalf("ExpireLeases() = %d, %v; want 1", n, err)
		}
		w := e.awaitWait(ch)
		if w.err != nil || stateOf(w.rec) != ledger.StateUnknown {
			t.Errorf("Wait(%q) on an expiring lease = %s, %v; want UNKNOWN", "k1", stateOf(w.rec), w.err)
		}
	})

	t.Run("ApprovalExpiry", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.NeedsApproval = true
		r.Lease = time.Second
		e.mustClaim(r)
		ch := e.startWait(e.ctx, id("k1"))
		e.clock.Advance(time.Second)
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
			t.Fatalf("ExpireLeases() = %d, %v; want 1", n, err)
		}
		w := e.awaitWait(ch)
		if w.err != nil || stateOf(w.rec) != ledger.StateRejected {
			t.Errorf("Wait(%q) on an expiring approval lease = %s, %v; want REJECTED", "k1", stateOf(w.rec), w.err)
		}
	})

	t.Run("Settled", func(t *testing.T) {
		e := newEnv(t, newStore)
		for _, st := range []ledger.State{ledger.StateSucceeded, ledger.StateFailed, ledger.StateRetryable, ledger.StateRejected, ledger.StateUnknown, ledger.StateDenied} {
			t.Run(string(st), func(t *testing.T) {
				e := e.sub(t)
				want := e.reach("k-"+string(st), st)
				got, err := e.st.Wait(e.ctx, want.ID)
				if err != nil {
					t.Fatalf("Wait(%q) on a %s record = %v; want it at once", want.Key, st, err)
				}
				if d := diff(got, want); d != "" {
					t.Errorf("Wait(%q) returned: %s", want.Key, d)
				}
			})
		}
	})

	t.Run("ContextEnds", func(t *testing.T) {
		e := newEnv(t, newStore)
		want := e.mustClaim(req("k1", "owner-1"))
		ctx, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
		defer cancel()
		w := e.awaitWait(e.startWait(ctx, id("k1")))
		if !errors.Is(w.err, context.DeadlineExceeded) {
			t.Errorf("Wait(%q) past its deadline = %v; want context.DeadlineExceeded", "k1", w.err)
		}
		if d := diff(w.rec, want); d != "" {
			t.Errorf("Wait(%q) past its deadline must return the latest record: %s", "k1", d)
		}

		ctx, cancel = context.WithCancel(e.ctx)
		ch := e.startWait(ctx, id("k1"))
		cancel()
		w = e.awaitWait(ch)
		if !errors.Is(w.err, context.Canceled) {
			t.Errorf("Wait(%q) after cancel = %v; want context.Canceled", "k1", w.err)
		}
		if got := e.mustGet(id("k1")); got.State != ledger.StateProcessing {
			t.Errorf("a waiter's end changed the record to %s", got.State)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		e := newEnv(t, newStore)
		ctx, cancel := context.WithTimeout(e.ctx, waitBound)
		defer cancel()
		if _, err := e.st.Wait(ctx, id("missing")); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Wait(%q) = %v; want ErrNotFound", "missing", err)
		}
	})
}
