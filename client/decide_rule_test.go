package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
)

// Decide holds the requester to the approver rule of the policy the call
// was queued under, which its record carries, whatever policy the approver
// runs; a record of an older build, which does not carry it, is refused to
// its requester under another policy rather than approved for a call that
// may refuse it.
func TestDecideKeepsTheQueuedPolicysApproverRule(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	for i, tc := range []struct {
		name  string
		owner string
		d     client.Decision
		want  error // nil: approved
	}{
		{"distinct policy, approver's policy says nothing", ledger.Queued{Requester: "bob", PolicyVersion: "v1", Distinct: true, DistinctKnown: true}.Owner(),
			client.Decision{Approve: true, By: "bob", PolicyVersion: "v2"}, client.ErrSameApprover},
		{"distinct policy, another person", ledger.Queued{Requester: "bob", PolicyVersion: "v1", Distinct: true, DistinctKnown: true}.Owner(),
			client.Decision{Approve: true, By: "ana", PolicyVersion: "v2"}, nil},
		{"policy lets the requester approve", ledger.Queued{Requester: "bob", PolicyVersion: "v1", DistinctKnown: true}.Owner(),
			client.Decision{Approve: true, By: "bob", PolicyVersion: "v2"}, nil},
		{"older record, another policy", ledger.QueueOwner(false, "v1", "bob"),
			client.Decision{Approve: true, By: "bob", PolicyVersion: "v2"}, client.ErrOtherPolicy},
		{"older record, the same policy", ledger.QueueOwner(false, "v1", "bob"),
			client.Decision{Approve: true, By: "bob", PolicyVersion: "v1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "write", Key: "k-" + string(rune('a'+i))}
			if _, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Arguments: []byte(`{}`), NeedsApproval: true, Owner: tc.owner, Lease: time.Hour}); err != nil {
				t.Fatal(err)
			}
			rec, err := client.Decide(ctx, st, id, tc.d)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("Decide = %v; want %v", err, tc.want)
				}
				if after := record(t, st, id.Tool, id.Key); after.Approval != nil {
					t.Errorf("the refused record carries the approval %+v", after.Approval)
				}
				return
			}
			if err != nil || rec.Approval == nil || rec.Approval.Decision != ledger.DecisionApproved {
				t.Fatalf("Decide = %+v, %v; want approved", rec, err)
			}
			if q, ok := client.QueuedCall(rec); !ok || !q.Approved || q.PolicyVersion != "v1" {
				t.Errorf("the approved record's owner %q reads %+v; want approved under v1, its rule kept", rec.Owner, q)
			}
		})
	}
}
