package guard_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/wire"
)

// A reconciler that does not answer within the budget leaves the record
// UNKNOWN with the attempt in its history, and the call gets -31003 once
// the budget is spent, not when the reconciler gives up.
func TestReconcilerPastItsBudgetIsUnknown(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	var asked atomic.Int64
	g := guard.New(st, &guard.Options{Logger: slog.New(slog.DiscardHandler), ReconcileBudget: 50 * time.Millisecond,
		Reconcilers: map[string]guard.Reconciler{"pay": func(context.Context, guard.ReconcileRequest) (ledger.Finding, error) {
			asked.Add(1)
			<-stuck // ignores its context
			return ledger.Finding{Verdict: ledger.VerdictFound}, nil
		}}})
	t.Cleanup(func() {
		if err := g.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	var runs atomic.Int64
	fail := func(context.Context) guard.End {
		runs.Add(1)
		return guard.End{Err: errors.New("payments: commit lost")}
	}
	req := &guard.Request{Tool: "pay", Meta: map[string]any{wire.MetaKey: "k-budget"}, Arguments: json.RawMessage(`{"amount":5}`)}
	for i := range 2 {
		a := g.Call(ctx, req, fail)
		var r *guard.Refusal
		if !errors.As(a.Err, &r) || r.Code != ledger.CodeOutcomeUnknown {
			t.Fatalf("call %d = %+v; want -31003", i, a)
		}
	}
	rec, err := st.Get(ctx, ledger.ID{Tenant: guard.DefaultTenant, Layer: ledger.LayerServer, Tool: "pay", Key: "k-budget"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != ledger.StateUnknown || rec.FindingCount != 1 || rec.Findings[0].Verdict != ledger.VerdictUnknown {
		t.Errorf("record = %s with %d findings (%+v); want UNKNOWN with one unknown finding", rec.State, rec.FindingCount, rec.Findings)
	}
	if runs.Load() != 1 || asked.Load() != 1 {
		t.Errorf("handler ran %d times, reconciler asked %d times; want 1 and 1", runs.Load(), asked.Load())
	}
}
