package ledger_test

import (
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/process"
)

// A queued call's owner names no process and reads back as it was written.
func TestQueueOwnerReadsBack(t *testing.T) {
	for _, approved := range []bool{false, true} {
		owner := ledger.QueueOwner(approved, "v1a2", "alice@host#12;x")
		if _, ok := process.Parse(owner); ok {
			t.Errorf("QueueOwner = %q parses as a process", owner)
		}
		rec := &ledger.Record{State: ledger.StatePendingApproval, Owner: owner}
		q, ok := ledger.QueuedCall(rec)
		if !ok || q.Approved != approved || q.PolicyVersion != "v1a2" || q.Requester != "alice_host_12_x" {
			t.Errorf("QueuedCall(%q) = %+v, %v; want approved %v, version v1a2, requester alice_host_12_x", owner, q, ok, approved)
		}
		rec.State = ledger.StateProcessing
		if _, ok := ledger.QueuedCall(rec); ok {
			t.Errorf("a PROCESSING record under %q is taken for a queued call", owner)
		}
	}
	if _, ok := ledger.QueuedCall(&ledger.Record{State: ledger.StatePendingApproval, Owner: process.NewOwner("agent")}); ok {
		t.Error("a prompt's PENDING_APPROVAL under a process is taken for a queued call")
	}
}

// A queued call's owner says whether its policy requires another approver;
// one written by an older build (VERSION alone) says it does not know.
func TestQueueOwnerKeepsTheApproverRule(t *testing.T) {
	for _, distinct := range []bool{false, true} {
		owner := ledger.Queued{Requester: "alice", PolicyVersion: "v1a2", Distinct: distinct, DistinctKnown: true}.Owner()
		q, ok := ledger.QueuedCall(&ledger.Record{State: ledger.StatePendingApproval, Owner: owner})
		if !ok || q.PolicyVersion != "v1a2" || q.Distinct != distinct || !q.DistinctKnown || q.Requester != "alice" {
			t.Errorf("QueuedCall(%q) = %+v, %v; want version v1a2, distinct %v, known", owner, q, ok, distinct)
		}
	}
	q, ok := ledger.QueuedCall(&ledger.Record{State: ledger.StatePendingApproval, Owner: "queue;v1a2;alice"})
	if !ok || q.PolicyVersion != "v1a2" || q.DistinctKnown || q.Distinct {
		t.Errorf("QueuedCall(older owner) = %+v, %v; want version v1a2, rule unknown", q, ok)
	}
}
