package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
)

// A handler's Go error may come after it acted: the record is UNKNOWN and
// the client gets -31003, never a final FAILED. A handler that knows
// nothing happened says so with ErrNotRun: the record is RETRYABLE, the
// client gets -31002 not_run, and the next attempt with the key runs it.
func TestHandlerErrorsByWhatHappened(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		code      int64
		reason    string
		state     ledger.State
		runsAfter int64 // handler runs after a second request with the key
	}{
		{"go error", fmt.Errorf("payments: commit lost: connection reset"), -31003, "outcome_unknown", ledger.StateUnknown, 1},
		{"not run", fmt.Errorf("payments: database is locked: %w", server.ErrNotRun), -31002, "not_run", ledger.StateRetryable, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil, nil)
			r.handle = func(ctx context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
				if r.runs.Load() == 1 {
					return nil, orderOut{}, tc.err
				}
				return nil, orderOut{OrderID: "ord-" + in.Item}, nil
			}
			cs := r.connect()
			ctx := context.Background()
			args := map[string]any{"item": "lamp", "qty": 1}
			res, err := callKey(ctx, cs, "create_order", "k-truth", args)
			if code, reason, _ := wireErr(err); code != tc.code || reason != tc.reason {
				t.Fatalf("first call = %v, %v; want %d %s", res, err, tc.code, tc.reason)
			}
			rec, err := r.store.Get(ctx, ledger.ID{Layer: ledger.LayerServer, Tenant: server.DefaultTenant, Tool: "create_order", Key: "k-truth"})
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if rec.State != tc.state {
				t.Errorf("record state = %s (%s); want %s", rec.State, rec.ErrorKind, tc.state)
			}
			_, err = callKey(ctx, cs, "create_order", "k-truth", args)
			if got := r.runs.Load(); got != tc.runsAfter {
				t.Errorf("handler ran %d times after the second request (%v); want %d", got, err, tc.runsAfter)
			}
			if tc.state == ledger.StateRetryable && err != nil {
				t.Errorf("second request after not_run: %v; want the result", err)
			}
		})
	}
}
