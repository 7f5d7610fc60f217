package ledgertest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// testFence checks the fencing token: it grows at every claim and take-over
// of a key, and a write under an older one fails and changes nothing.
func testFence(t *testing.T, newStore NewStore) {
	t.Run("GrowsAtEveryClaimAndTakeOver", func(t *testing.T) {
		e := newEnv(t, newStore)
		rec := e.mustClaim(req("k1", "owner-1"))
		if rec.Fence != 1 {
			t.Fatalf("Claim of a new key: fence %d; want 1", rec.Fence)
		}
		last := rec.Fence
		// check requires rec to be at one more than the last fence (or at
		// the same one when kept), as returned and as stored.
		check := func(how string, rec *ledger.Record, grows bool) {
			t.Helper()
			want := last
			if grows {
				want++
			}
			if rec.Fence != want {
				t.Errorf("%s: fence %d; want %d", how, rec.Fence, want)
			}
			if got := e.mustGet(rec.ID); got.Fence != rec.Fence {
				t.Errorf("%s: Get fence %d; want %d as returned", how, got.Fence, rec.Fence)
			}
			last = rec.Fence
		}
		step := func(rec *ledger.Record, to ledger.State) *ledger.Record {
			t.Helper()
			return e.mustTransition(ledger.Transition{ID: rec.ID, From: rec.State, To: to, Owner: rec.Owner, Fence: rec.Fence, AddAttempts: 1})
		}
		rec = step(rec, ledger.StateRetryable)
		check("PROCESSING -> RETRYABLE", rec, false)
		rec = e.mustClaim(req("k1", "owner-2"))
		check("take-over of RETRYABLE", rec, true)
		rec = step(rec, ledger.StateRejected)
		check("PROCESSING -> REJECTED", rec, false)
		approval := req("k1", "owner-3")
		approval.NeedsApproval = true
		rec = e.mustClaim(approval)
		check("claim of REJECTED for approval", rec, true)
		rec = e.mustTransition(ledger.Transition{ID: rec.ID, From: ledger.StatePendingApproval, To: ledger.StateProcessing,
			Owner: rec.Owner, Fence: rec.Fence, Approval: &ledger.Approval{Decision: ledger.DecisionApproved, By: "alice", At: e.clock.Now()}})
		check("PENDING_APPROVAL -> PROCESSING", rec, false)
		rec = step(rec, ledger.StateUnknown)
		check("PROCESSING -> UNKNOWN", rec, false)
		rec = e.mustTransition(ledger.Transition{ID: rec.ID, From: ledger.StateUnknown, To: ledger.StateProcessing, Owner: "owner-4"})
		check("re-send from UNKNOWN", rec, true)
		rec = step(rec, ledger.StateSucceeded)
		check("PROCESSING -> SUCCEEDED", rec, false)
		e.clock.Advance(ledger.DefaultRetention)
		rec = e.mustClaim(req("k1", "owner-5"))
		check("replacement past retention", rec, true)
		c, err := e.st.Claim(e.ctx, req("k1", "owner-6"))
		if err != nil || c.Won || c.Record.Fence != rec.Fence {
			t.Errorf("follower's Claim = {Won: %v, Fence: %d}, %v; want a follower seeing fence %d", c.Won, fenceOf(c.Record), err, rec.Fence)
		}
	})

	// A paused owner wakes after its lease ended and the key was taken
	// over: every write it makes fails and changes nothing.
	t.Run("PausedOwnerAfterTakeOver", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.Lease = 10 * time.Second
		paused := ledger.LeaseOf(e.mustClaim(r))
		e.clock.Advance(10 * time.Second)
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
			t.Fatalf("ExpireLeases() = %d, %v; want 1", n, err)
		}
		current := e.mustTransition(ledger.Transition{ID: paused.ID, From: ledger.StateUnknown, To: ledger.StateProcessing, Owner: "owner-2"})
		if current.Fence <= paused.Fence {
			t.Fatalf("re-send fence %d; want more than the paused owner's %d", current.Fence, paused.Fence)
		}
		e.clock.Advance(time.Second)
		before := e.mustGet(paused.ID)
		if err := e.st.Renew(e.ctx, paused, time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("Renew by the paused owner = %v; want ErrLeaseLost", err)
		}
		writes := []ledger.Transition{
			{From: ledger.StateProcessing, To: ledger.StateSucceeded},
			{From: ledger.StateUnknown, To: ledger.StateSucceeded}, // its late result
			{From: ledger.StateProcessing, To: ledger.StateUnknown},
		}
		for _, w := range writes {
			w.ID, w.Owner, w.Fence, w.Result = paused.ID, paused.Owner, paused.Fence, json.RawMessage(`{"late":true}`)
			if _, err := e.st.Transition(e.ctx, w); !errors.Is(err, ledger.ErrLeaseLost) {
				t.Errorf("Transition(%s -> %s) by the paused owner at fence %d = %v; want ErrLeaseLost", w.From, w.To, w.Fence, err)
			}
		}
		// The current owner's fence with the paused owner's name is not
		// the lease either.
		if _, err := e.st.Transition(e.ctx, ledger.Transition{ID: paused.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: paused.Owner, Fence: current.Fence}); !errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("Transition by %s at the current fence %d = %v; want ErrLeaseLost (the owner must match too)", paused.Owner, current.Fence, err)
		}
		if d := diff(e.mustGet(paused.ID), before); d != "" {
			t.Errorf("the paused owner changed the record: %s", d)
		}
		done := e.mustTransition(ledger.Transition{ID: paused.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: current.Owner, Fence: current.Fence, Result: json.RawMessage(`{"id":1}`)})
		if string(done.Result) != `{"id":1}` {
			t.Errorf("current owner's result = %s; want its own", done.Result)
		}
	})

	// The owner whose lease ended mid-call may still report the outcome
	// from UNKNOWN, under its fence, as long as no one took the key over.
	t.Run("LateResultFromUnknown", func(t *testing.T) {
		e := newEnv(t, newStore)
		expire := func(key, owner string) ledger.Lease {
			t.Helper()
			r := req(key, owner)
			r.Lease = 10 * time.Second
			l := ledger.LeaseOf(e.mustClaim(r))
			e.clock.Advance(10 * time.Second)
			if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
				t.Fatalf("ExpireLeases() = %d, %v; want 1", n, err)
			}
			return l
		}
		result := json.RawMessage(`{"id":"pay_1"}`)

		l := expire("accepted", "owner-1")
		got := e.mustTransition(ledger.Transition{ID: l.ID, From: ledger.StateUnknown, To: ledger.StateSucceeded,
			Owner: l.Owner, Fence: l.Fence, Result: result})
		if got.State != ledger.StateSucceeded || string(got.Result) != string(result) || got.Fence != l.Fence {
			t.Errorf("late result under the current fence = %s %s fence %d; want SUCCEEDED with it at fence %d", got.State, got.Result, got.Fence, l.Fence)
		}

		first := expire("stale", "owner-1")
		second := e.mustTransition(ledger.Transition{ID: first.ID, From: ledger.StateUnknown, To: ledger.StateProcessing, Owner: "owner-2", Lease: 10 * time.Second})
		e.clock.Advance(10 * time.Second)
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
			t.Fatalf("ExpireLeases() of the re-send = %d, %v; want 1", n, err)
		}
		before := e.mustGet(first.ID)
		for _, fence := range []int64{first.Fence, second.Fence + 1} {
			_, err := e.st.Transition(e.ctx, ledger.Transition{ID: first.ID, From: ledger.StateUnknown, To: ledger.StateSucceeded,
				Owner: first.Owner, Fence: fence, Result: result})
			if !errors.Is(err, ledger.ErrLeaseLost) {
				t.Errorf("late result at fence %d while the key is at %d = %v; want ErrLeaseLost", fence, second.Fence, err)
			}
		}
		if d := diff(e.mustGet(first.ID), before); d != "" {
			t.Errorf("a stale late result changed the record: %s", d)
		}
		got = e.mustTransition(ledger.Transition{ID: first.ID, From: ledger.StateUnknown, To: ledger.StateFailed,
			Owner: second.Owner, Fence: second.Fence, Result: result})
		if got.State != ledger.StateFailed || got.Fence != second.Fence {
			t.Errorf("late result of the last owner = %s fence %d; want FAILED at fence %d", got.State, got.Fence, second.Fence)
		}

		// A person's reconciliation carries no fence and is accepted.
		p := expire("person", "owner-1")
		got = e.mustTransition(ledger.Transition{ID: p.ID, From: ledger.StateUnknown, To: ledger.StateSucceeded, Result: result})
		if got.State != ledger.StateSucceeded || got.Fence != p.Fence {
			t.Errorf("reconciliation = %s fence %d; want SUCCEEDED, fence %d kept", got.State, got.Fence, p.Fence)
		}
	})

	// Every read returns the fence the record holds.
	t.Run("Reads", func(t *testing.T) {
		e := newEnv(t, newStore)
		first := e.reach("k1", ledger.StateRetryable)
		rec := e.mustClaim(req("k1", "owner-2"))
		if rec.Fence != first.Fence+1 {
			t.Fatalf("take-over fence %d; want %d", rec.Fence, first.Fence+1)
		}
		page, err := e.st.List(e.ctx, ledger.Filter{Tenant: tenant})
		if err != nil || len(page.Records) != 1 || page.Records[0].Fence != rec.Fence {
			t.Errorf("List = %v, %v; want the one record at fence %d", fences(page.Records), err, rec.Fence)
		}
		recent, err := e.st.FindRecent(e.ctx, ledger.RecentQuery{Tenant: tenant, Session: rec.Session, Tool: tool, Fingerprint: rec.Fingerprint, Since: Start})
		if err != nil || len(recent) != 1 || recent[0].Fence != rec.Fence {
			t.Errorf("FindRecent = %v, %v; want the one record at fence %d", fences(recent), err, rec.Fence)
		}
		ch := e.startWait(e.ctx, rec.ID)
		done := e.mustTransition(ledger.Transition{ID: rec.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: rec.Owner, Fence: rec.Fence})
		if w := e.awaitWait(ch); w.err != nil || fenceOf(w.rec) != rec.Fence || done.Fence != rec.Fence {
			t.Errorf("Wait = fence %d, %v; Transition fence %d; want both at %d", fenceOf(w.rec), w.err, done.Fence, rec.Fence)
		}
	})
}

func fenceOf(r *ledger.Record) int64 {
	if r == nil {
		return -1
	}
	return r.Fence
}

func fences(recs []*ledger.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.Fence
	}
	return out
}
