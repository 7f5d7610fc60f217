package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The sweep puts the UNKNOWN records due to their tool's reconciler: a
// found payment settles its record in the background, and the next call
// with the key gets the found result as a replay without running the
// handler; a reconciler that finds nothing leaves the record UNKNOWN with
// the attempt in its history.
func TestSweepReconcilesDueUnknownRecords(t *testing.T) {
	var asked atomic.Int64
	found := map[string]bool{"sweep-found": true}
	opts := &server.Options{Reconcilers: map[string]server.Reconciler{
		"create_order": func(_ context.Context, req server.ReconcileRequest) (ledger.Finding, error) {
			asked.Add(1)
			if !found[req.Key] {
				return ledger.Finding{Verdict: ledger.VerdictUnknown, Evidence: "no order with this key yet"}, nil
			}
			return ledger.Finding{Verdict: ledger.VerdictFound, Evidence: "order ord-found has key " + req.Key,
				Result: json.RawMessage(`{"content":[{"type":"text","text":"ord-found"}]}`)}, nil
		},
	}}
	r := newRig(t, nil, opts)
	r.handle = func(context.Context, *mcp.CallToolRequest, orderIn) (*mcp.CallToolResult, orderOut, error) {
		return nil, orderOut{}, errors.New("orders: commit lost: connection reset")
	}
	cs := r.connect()
	ctx := context.Background()
	for _, key := range []string{"sweep-found", "sweep-missing"} {
		if _, err := callKey(ctx, cs, "create_order", key, map[string]any{"item": "a", "qty": 1}); err == nil {
			t.Fatalf("call %s whose handler failed: no error; want -31003", key)
		}
	}
	if got := r.guard.Core().ReconcileDue(ctx); got != 1 {
		t.Errorf("ReconcileDue settled %d records; want 1", got)
	}
	if asked.Load() != 2 {
		t.Errorf("the reconciler was asked %d times; want 2", asked.Load())
	}
	rec, err := r.store.Get(ctx, orderID("sweep-missing"))
	if err != nil || rec.State != ledger.StateUnknown || rec.FindingCount != 1 {
		t.Fatalf("record of sweep-missing = %+v, %v; want UNKNOWN with 1 finding", rec, err)
	}
	r.handle = nil
	res, err := callKey(ctx, cs, "create_order", "sweep-found", map[string]any{"item": "a", "qty": 1})
	if err != nil {
		t.Fatalf("call after the sweep found it: %v", err)
	}
	if _, ok := res.Meta[wire.MetaReplay]; !ok || res.Content[0].(*mcp.TextContent).Text != "ord-found" {
		t.Errorf("answer = %+v; want the found result as a replay", res)
	}
	if n := r.runs.Load(); n != 2 {
		t.Errorf("create_order ran %d times; want 2 (once per key)", n)
	}
	// Not due again before its backoff: the next sweep leaves it alone.
	if got := r.guard.Core().ReconcileDue(ctx); got != 0 || asked.Load() != 2 {
		t.Errorf("second sweep settled %d and asked %d times in all; want 0 and 2", got, asked.Load())
	}
}
