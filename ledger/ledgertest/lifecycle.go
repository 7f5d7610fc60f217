package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// testLifecycle runs ledger.Lifecycle on the store: the one implementation
// of claim, fenced lease, settle and follow must mean the same on every
// backend.
func testLifecycle(t *testing.T, newStore NewStore) {
	lifecycle := func(e *env, owner string) *ledger.Lifecycle {
		return &ledger.Lifecycle{Store: e.st, Owner: owner, Lease: time.Minute, Wait: 20 * time.Second, Now: e.clock.Now}
	}
	claim := func(key, args string) ledger.ClaimRequest {
		return ledger.ClaimRequest{ID: id(key), Fingerprint: fp(args), Arguments: json.RawMessage(`{"v":"` + args + `"}`)}
	}
	ok := func(res string) ledger.Exec {
		return func(context.Context, ledger.Lease) ledger.Report {
			return ledger.Report{On: ledger.OnSucceeded, Result: json.RawMessage(res), Attempts: 1}
		}
	}

	t.Run("OneExecution", func(t *testing.T) {
		e := newEnv(t, newStore)
		var runs atomic.Int32
		var wg sync.WaitGroup
		const callers = 16
		recs := make([]*ledger.Record, callers)
		errs := make([]error, callers)
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lc := lifecycle(e, "owner-"+string(rune('a'+i)))
				recs[i], _, errs[i] = lc.Do(e.ctx, claim("once", "x"), func(ctx context.Context, l ledger.Lease) ledger.Report {
					runs.Add(1)
					return ok(`{"n":1}`)(ctx, l)
				})
			}()
		}
		wg.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("%d concurrent Do of one key ran the call %d times; want 1", callers, n)
		}
		for i := range callers {
			if errs[i] != nil || recs[i] == nil || recs[i].State != ledger.StateSucceeded || string(recs[i].Result) != `{"n":1}` {
				t.Errorf("Do #%d = %+v, %v; want the SUCCEEDED record with the one result", i, recs[i], errs[i])
			}
		}
	})

	t.Run("RefusedThenCorrected", func(t *testing.T) {
		e := newEnv(t, newStore)
		lc := lifecycle(e, "owner-1")
		rec, ran, err := lc.Do(e.ctx, claim("fix", "bad"), func(context.Context, ledger.Lease) ledger.Report {
			return ledger.Report{On: ledger.OnRefused, ErrorKind: ledger.KindRefused, ErrorMessage: "payee: want string", Attempts: 1}
		})
		if err != nil || !ran || rec.State != ledger.StateRejected {
			t.Fatalf("Do(refused) = %+v, %v, %v; want REJECTED, ran", rec, ran, err)
		}
		// The same key with corrected arguments is a new claim, not a key reuse.
		rec, ran, err = lc.Do(e.ctx, claim("fix", "good"), ok(`{"ok":true}`))
		if err != nil || !ran || rec.State != ledger.StateSucceeded || rec.Fingerprint != fp("good") {
			t.Fatalf("Do(corrected, same key) = %+v, %v, %v; want SUCCEEDED with the new fingerprint", rec, ran, err)
		}
		if rec.Fence < 2 {
			t.Errorf("fence after a re-claim = %d; want >= 2", rec.Fence)
		}
	})

	t.Run("NoAnswerThenAnswer", func(t *testing.T) {
		e := newEnv(t, newStore)
		lc := lifecycle(e, "owner-1")
		req := claim("ask", "x")
		req.NeedsApproval = true
		cl, err := lc.Claim(e.ctx, req)
		if err != nil || !cl.Won || cl.Record.State != ledger.StatePendingApproval || cl.Record.LeaseUntil.IsZero() {
			t.Fatalf("Claim(NeedsApproval) = %+v, %v; want a leased PENDING_APPROVAL won", cl.Record, err)
		}
		rec, err := lc.Settle(e.ctx, ledger.LeaseOf(cl.Record), ledger.StatePendingApproval, ledger.Report{On: ledger.OnNoAnswer, ErrorKind: ledger.KindNoAnswer})
		if err != nil || rec.State != ledger.StateRejected {
			t.Fatalf("Settle(no answer) = %+v, %v; want REJECTED", rec, err)
		}
		cl, err = lc.Claim(e.ctx, req)
		if err != nil || !cl.Won || cl.Record.State != ledger.StatePendingApproval {
			t.Fatalf("Claim after no answer = %+v, %v; want won again, PENDING_APPROVAL", cl.Record, err)
		}
		rec, err = lc.Settle(e.ctx, ledger.LeaseOf(cl.Record), ledger.StatePendingApproval,
			ledger.Report{On: ledger.OnDeny, Approval: &ledger.Approval{Decision: ledger.DecisionDenied, By: "ops", Reason: "no"}})
		if err != nil || rec.State != ledger.StateDenied {
			t.Fatalf("Settle(deny) = %+v, %v; want DENIED", rec, err)
		}
		if cl, err = lc.Claim(e.ctx, req); err != nil || cl.Won || cl.Record.State != ledger.StateDenied {
			t.Fatalf("Claim after a denial = %+v, %v; want the DENIED record, not won", cl.Record, err)
		}
	})

	t.Run("ExpiredLeaseThenStaleOwner", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, b := lifecycle(e, "owner-a"), lifecycle(e, "owner-b")
		cl, err := a.Claim(e.ctx, claim("paused", "x"))
		if err != nil || !cl.Won {
			t.Fatalf("Claim = %+v, %v; want won", cl.Record, err)
		}
		stale := ledger.LeaseOf(cl.Record)
		// owner-a pauses past its lease; a follower ends the lease.
		e.clock.Advance(2 * time.Minute)
		rec, err := b.Follow(e.ctx, cl.Record)
		if err != nil || rec.State != ledger.StateUnknown || rec.ErrorKind != ledger.KindLeaseExpired {
			t.Fatalf("Follow of an expired lease = %+v, %v; want UNKNOWN lease_expired", rec, err)
		}
		// owner-b takes the key over (a re-send to a key-aware server).
		again, err := e.st.Transition(e.ctx, ledger.Transition{ID: rec.ID, From: ledger.StateUnknown, To: ledger.StateProcessing, Owner: "owner-b", Lease: time.Minute})
		if err != nil || again.Fence <= stale.Fence {
			t.Fatalf("take-over = %+v, %v; want PROCESSING with a fence above %d", again, err, stale.Fence)
		}
		// owner-a wakes up: nothing it reports is recorded.
		if _, err := a.Settle(e.ctx, stale, ledger.StateProcessing, ledger.Report{On: ledger.OnSucceeded, Result: json.RawMessage(`{"a":1}`)}); !errors.Is(err, ledger.ErrStale) {
			t.Fatalf("stale owner's Settle = %v; want ErrStale", err)
		}
		if err := e.st.Renew(e.ctx, stale, time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
			t.Fatalf("stale owner's Renew = %v; want ErrLeaseLost", err)
		}
		if got := e.mustGet(rec.ID); got.State != ledger.StateProcessing || got.Owner != "owner-b" || got.Fence != again.Fence || len(got.Result) != 0 {
			t.Fatalf("record after the stale owner's writes = %+v; want owner-b's PROCESSING untouched", got)
		}
		done, err := b.Settle(e.ctx, ledger.LeaseOf(again), ledger.StateProcessing, ledger.Report{On: ledger.OnSucceeded, Result: json.RawMessage(`{"b":1}`)})
		if err != nil || done.State != ledger.StateSucceeded || string(done.Result) != `{"b":1}` {
			t.Fatalf("new owner's Settle = %+v, %v; want SUCCEEDED with its result", done, err)
		}
	})

	t.Run("LateResultReconciles", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, b := lifecycle(e, "owner-a"), lifecycle(e, "owner-b")
		cl, err := a.Claim(e.ctx, claim("late", "x"))
		if err != nil || !cl.Won {
			t.Fatalf("Claim = %+v, %v; want won", cl.Record, err)
		}
		e.clock.Advance(2 * time.Minute)
		if rec, err := b.Follow(e.ctx, cl.Record); err != nil || rec.State != ledger.StateUnknown {
			t.Fatalf("Follow = %+v, %v; want UNKNOWN", rec, err)
		}
		// Nobody took the key over: the owner's late result is what happened.
		rec, err := a.Settle(e.ctx, ledger.LeaseOf(cl.Record), ledger.StateProcessing, ledger.Report{On: ledger.OnSucceeded, Result: json.RawMessage(`{"a":1}`)})
		if err != nil || rec.State != ledger.StateSucceeded || string(rec.Result) != `{"a":1}` {
			t.Fatalf("late Settle = %+v, %v; want SUCCEEDED from UNKNOWN", rec, err)
		}
	})

	t.Run("FollowInProgressBound", func(t *testing.T) {
		e := newEnv(t, newStore)
		a := lifecycle(e, "owner-a")
		cl, err := a.Claim(e.ctx, claim("busy", "x"))
		if err != nil || !cl.Won {
			t.Fatalf("Claim = %+v, %v; want won", cl.Record, err)
		}
		f := lifecycle(e, "owner-f")
		f.Wait = 50 * time.Millisecond
		rec, err := f.Follow(e.ctx, cl.Record)
		if !errors.Is(err, ledger.ErrInProgress) || rec.State != ledger.StateProcessing {
			t.Fatalf("Follow past its bound = %+v, %v; want PROCESSING and ErrInProgress", rec, err)
		}
	})
}
