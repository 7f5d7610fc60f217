package guard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger"
)

// A request that meets a record it may not run answers with the JSON-RPC
// code and data.reason of that record's row, and names its state.
func TestRepeatAnswersWithTheRow(t *testing.T) {
	id := ledger.ID{Tool: "create_order", Key: "k-1"}
	for _, tc := range []struct {
		state ledger.State
		err   error
		row   ledger.State // whose row answers
	}{
		{ledger.StateUnknown, nil, ledger.StateUnknown},
		{ledger.StateProcessing, nil, ledger.StateProcessing},
		{ledger.StatePendingApproval, nil, ledger.StatePendingApproval},
		{ledger.StateProcessing, ledger.ErrInProgress, ledger.StateProcessing},
	} {
		rec := &ledger.Record{ID: id, State: tc.state}
		err := guard.Repeat(context.Background(), id, rec, tc.err, 0)
		var r *guard.Refusal
		if !errors.As(err, &r) {
			t.Fatalf("Repeat of a %s record = %v; want a refusal", tc.state, err)
		}
		row := ledger.RowOf(tc.row)
		if r.Code != row.Code || r.Data == nil || r.Data.Reason != row.Reason || r.Data.State != string(tc.state) {
			t.Errorf("Repeat of a %s record = code %d data %+v; want code %d reason %q state %s",
				tc.state, r.Code, r.Data, row.Code, row.Reason, tc.state)
		}
	}
	r := guard.Unknown("create_order", "k-1", "the handler panicked")
	if row := ledger.RowOf(ledger.StateUnknown); r.Code != row.Code || r.Data.Reason != row.Reason {
		t.Errorf("Unknown = code %d reason %q; want UNKNOWN's row, %d %q", r.Code, r.Data.Reason, row.Code, row.Reason)
	}
}
