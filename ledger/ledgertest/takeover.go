package ledgertest

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// testTakeOver checks Transition.NewOwner: a queued approval is recorded
// (PENDING_APPROVAL -> PENDING_APPROVAL) and consumed (-> PROCESSING) by
// owners other than the one that claimed it, each a take-over with fence+1,
// and only one of two racing consumers wins.
func testTakeOver(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	r := req("queued", "queue;v1;alice")
	r.NeedsApproval = true
	r.Lease = 24 * time.Hour
	claimed := e.mustClaim(r)
	e.clock.Advance(time.Minute)
	ap := &ledger.Approval{Decision: ledger.DecisionApproved, By: "bob", At: e.clock.Now(), Fingerprint: claimed.Fingerprint,
		PolicyVersion: "v1", Expires: claimed.LeaseUntil, Requester: "alice"}
	approved := e.mustTransition(ledger.Transition{ID: id("queued"), From: ledger.StatePendingApproval, To: ledger.StatePendingApproval,
		Owner: "queue;v1;alice", Fence: claimed.Fence, NewOwner: "approved;v1;alice", Lease: 23*time.Hour + 59*time.Minute, Approval: ap})
	if approved.State != ledger.StatePendingApproval || approved.Owner != "approved;v1;alice" || approved.Fence != claimed.Fence+1 ||
		approved.Approval == nil || approved.Approval.By != "bob" || approved.Approval.PolicyVersion != "v1" ||
		!approved.LeaseUntil.Equal(claimed.LeaseUntil) {
		t.Fatalf("approval take-over = %+v; want PENDING_APPROVAL owned by approved;v1;alice, fence %d, bob's bound approval, the same expiry", approved, claimed.Fence+1)
	}
	// The queue's old owner and fence no longer hold the lease.
	if _, err := e.st.Transition(e.ctx, ledger.Transition{ID: id("queued"), From: ledger.StatePendingApproval, To: ledger.StateDenied,
		Owner: "queue;v1;alice", Fence: claimed.Fence}); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Errorf("deny under the replaced lease = %v; want ErrLeaseLost", err)
	}
	consume := func(owner string) (*ledger.Record, error) {
		return e.st.Transition(e.ctx, ledger.Transition{ID: id("queued"), From: ledger.StatePendingApproval, To: ledger.StateProcessing,
			Owner: "approved;v1;alice", Fence: approved.Fence, NewOwner: owner, Lease: 30 * time.Second})
	}
	run, err := consume("worker-1")
	if err != nil {
		t.Fatalf("consume = %v; want the take-over", err)
	}
	if run.State != ledger.StateProcessing || run.Owner != "worker-1" || run.Fence != approved.Fence+1 ||
		!run.LeaseUntil.Equal(e.clock.Now().Add(30*time.Second)) || run.Approval == nil || run.Approval.By != "bob" {
		t.Errorf("consume = %+v; want PROCESSING owned by worker-1, fence %d, a 30s lease, bob's approval kept", run, approved.Fence+1)
	}
	if _, err := consume("worker-2"); !errors.Is(err, ledger.ErrLeaseLost) && !errors.Is(err, ledger.ErrStateChanged) {
		t.Errorf("second consume = %v; want ErrLeaseLost or ErrStateChanged (the approval is used once)", err)
	}
	if err := e.st.Renew(e.ctx, ledger.LeaseOf(run), time.Minute); err != nil {
		t.Errorf("Renew by the new owner = %v; want nil", err)
	}
	done := e.mustTransition(ledger.Transition{ID: id("queued"), From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: "worker-1", Fence: run.Fence, Result: []byte(`{"content":[]}`), AddAttempts: 1})
	if done.State != ledger.StateSucceeded || done.Approval == nil || done.Approval.By != "bob" {
		t.Errorf("settled = %+v; want SUCCEEDED with bob's approval", done)
	}
}
