package ledgertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

func testTransition(t *testing.T, newStore NewStore) {
	// Every pair of states, legal or not, as the one table in ledger says.
	t.Run("Table", func(t *testing.T) {
		e := newEnv(t, newStore)
		for _, from := range ledger.States {
			for _, to := range ledger.States {
				name := fmt.Sprintf("%s_to_%s", from, to)
				t.Run(name, func(t *testing.T) {
					e := e.sub(t)
					key := "k." + name
					before := e.reach(key, from)
					now := e.clock.Advance(time.Second)
					// The owner of a leased record writes under its own
					// lease; a re-send from UNKNOWN is another owner's.
					tr := ledger.Transition{ID: id(key), From: from, To: to, Owner: before.Owner,
						Fence: before.Fence, Lease: time.Minute, AddAttempts: 1}
					if from == ledger.StateUnknown && to == ledger.StateProcessing {
						tr.Owner = "owner-2"
					}
					got, err := e.st.Transition(e.ctx, tr)
					if ledger.CheckTransition(from, to) != nil {
						if !errors.Is(err, ledger.ErrIllegalTransition) {
							t.Fatalf("Transition(%q, %s -> %s) = %v; want ErrIllegalTransition", key, from, to, err)
						}
						if d := diff(e.mustGet(tr.ID), before); d != "" {
							t.Errorf("illegal Transition(%q, %s -> %s) changed the record: %s", key, from, to, d)
						}
						return
					}
					if err != nil {
						t.Fatalf("Transition(%q, %s -> %s) = %v; want success", key, from, to, err)
					}
					want := *before
					want.State, want.Attempts, want.UpdatedAt = to, before.Attempts+1, now
					want.LeaseUntil = time.Time{}
					if to.Waiting() {
						want.Owner, want.LeaseUntil = tr.Owner, now.Add(time.Minute)
					}
					if from == ledger.StateUnknown && to == ledger.StateProcessing {
						want.Fence = before.Fence + 1 // a take-over
					}
					if d := diff(got, &want); d != "" {
						t.Errorf("Transition(%q, %s -> %s) returned: %s", key, from, to, d)
					}
					if d := diff(e.mustGet(tr.ID), &want); d != "" {
						t.Errorf("Get(%q) after %s -> %s: %s", key, from, to, d)
					}
				})
			}
		}
	})

	// The table is consulted before storage: an illegal edge fails the
	// same way whether or not the record exists.
	t.Run("IllegalBeforeStorage", func(t *testing.T) {
		e := newEnv(t, newStore)
		cases := []struct{ from, to ledger.State }{
			{ledger.StateSucceeded, ledger.StateProcessing},
			{ledger.StateProcessing, ledger.StateProcessing},
			{ledger.StateDenied, ledger.StateSucceeded},
			{"", ledger.StateSucceeded},
			{"BOGUS", ledger.StateFailed},
			{ledger.StateProcessing, "BOGUS"},
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s_to_%s", tc.from, tc.to), func(t *testing.T) {
				_, err := e.st.Transition(e.ctx, ledger.Transition{ID: id("missing"), From: tc.from, To: tc.to, Owner: "owner-1"})
				if !errors.Is(err, ledger.ErrIllegalTransition) {
					t.Errorf("Transition(%q, %s -> %s) = %v; want ErrIllegalTransition", "missing", tc.from, tc.to, err)
				}
			})
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, err := e.st.Transition(e.ctx, ledger.Transition{ID: id("missing"), From: ledger.StateUnknown, To: ledger.StateProcessing, Owner: "owner-1"})
		if !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Transition(%q) of a missing record = %v; want ErrNotFound", "missing", err)
		}
		if _, err := e.st.Get(e.ctx, id("missing")); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Get(%q) = %v; want ErrNotFound", "missing", err)
		}
	})

	t.Run("StateChanged", func(t *testing.T) {
		cases := []struct {
			name     string
			state    ledger.State
			from, to ledger.State
		}{
			{"unknown expected, retryable found", ledger.StateRetryable, ledger.StateUnknown, ledger.StateProcessing},
			{"unknown expected, processing found", ledger.StateProcessing, ledger.StateUnknown, ledger.StateSucceeded},
			{"unknown expected, rejected found", ledger.StateRejected, ledger.StateUnknown, ledger.StateSucceeded},
			{"unknown expected, failed found", ledger.StateFailed, ledger.StateUnknown, ledger.StateFailed},
		}
		e := newEnv(t, newStore)
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := e.sub(t)
				key := fmt.Sprintf("k%d", i)
				before := e.reach(key, tc.state)
				_, err := e.st.Transition(e.ctx, ledger.Transition{ID: id(key), From: tc.from, To: tc.to, Owner: "owner-1"})
				if !errors.Is(err, ledger.ErrStateChanged) {
					t.Errorf("Transition(%q, %s -> %s) of a %s record = %v; want ErrStateChanged", key, tc.from, tc.to, tc.state, err)
				}
				if d := diff(e.mustGet(id(key)), before); d != "" {
					t.Errorf("failed compare-and-set changed the record: %s", d)
				}
			})
		}
	})

	t.Run("Fields", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.NeedsApproval = true
		claimed := e.mustClaim(r)
		at := e.clock.Advance(time.Second)
		approval := &ledger.Approval{Decision: ledger.DecisionApproved, By: "alice", At: at, Reason: "looks right"}
		got := e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StatePendingApproval, To: ledger.StateProcessing,
			Owner: "owner-1", Fence: claimed.Fence, Lease: time.Minute, Approval: approval})
		if !sameApproval(got.Approval, approval) || got.Owner != "owner-1" || got.Fence != claimed.Fence || !got.LeaseUntil.Equal(at.Add(time.Minute)) {
			t.Errorf("approve: Approval %+v owner %q fence %d lease %v; want %+v owner %q fence %d (kept) lease %v",
				got.Approval, got.Owner, got.Fence, got.LeaseUntil, approval, "owner-1", claimed.Fence, at.Add(time.Minute))
		}
		result := json.RawMessage(`{"content":[{"type":"text","text":"done"}],"isError":true}`)
		got = e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateProcessing, To: ledger.StateFailed,
			Owner: "owner-1", Fence: got.Fence, Result: result, Compacted: true, ErrorKind: "tool_error", ErrorMessage: "card declined", AddAttempts: 2})
		want := e.mustGet(id("k1"))
		if d := diff(got, want); d != "" {
			t.Errorf("Transition's record differs from Get's: %s", d)
		}
		if string(got.Result) != string(result) || !got.Compacted || got.ErrorKind != "tool_error" ||
			got.ErrorMessage != "card declined" || got.Attempts != 2 || got.Owner != "owner-1" {
			t.Errorf("FAILED record = result %s compacted %v error %q/%q attempts %d owner %q; want the transition's values",
				got.Result, got.Compacted, got.ErrorKind, got.ErrorMessage, got.Attempts, got.Owner)
		}
		if !sameApproval(got.Approval, approval) {
			t.Errorf("a transition without Approval dropped the stored one: %+v", got.Approval)
		}
	})

	t.Run("ReconcileKeepsAndClears", func(t *testing.T) {
		e := newEnv(t, newStore)
		claimed := e.mustClaim(req("k1", "owner-1"))
		e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateProcessing, To: ledger.StateUnknown,
			Owner: "owner-1", Fence: claimed.Fence, ErrorKind: "ambiguous", ErrorMessage: "deadline after send", AddAttempts: 1})
		// A re-send under a fresh lease starts without the last error, and
		// takes the key over under a new fence.
		got := e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateUnknown, To: ledger.StateProcessing, Owner: "owner-2"})
		if got.ErrorKind != "" || got.ErrorMessage != "" || got.Owner != "owner-2" || got.Fence != claimed.Fence+1 {
			t.Errorf("UNKNOWN -> PROCESSING kept error %q/%q owner %q fence %d; want the error cleared, owner-2 and fence %d",
				got.ErrorKind, got.ErrorMessage, got.Owner, got.Fence, claimed.Fence+1)
		}
		if d := diff(e.mustGet(id("k1")), got); d != "" {
			t.Errorf("Get after the re-send: %s", d)
		}
		got = e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: "owner-2", Fence: got.Fence, Result: json.RawMessage(`{"id":7}`), AddAttempts: 1})
		if got.Attempts != 2 || string(got.Result) != `{"id":7}` {
			t.Errorf("after re-send: attempts %d result %s; want 2 and the result", got.Attempts, got.Result)
		}
	})
}
