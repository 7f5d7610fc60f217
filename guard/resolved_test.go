package guard_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/mcpledger/mcpledger/internal/metrictest"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
)

// resolvedBy sums mcpledger.unknown.resolved{method} as reader has it.
func resolvedBy(t *testing.T, reader *metrictest.Recorder, method ledger.Method) int64 {
	t.Helper()
	return reader.Sum(telemetry.MetricUnknownResolved, telemetry.AttrResolutionMethod.String(string(method)))
}

// The guard's reconciler reports each resolution, inline (a call meets the
// UNKNOWN record) and in the sweep, as method "reconciler"; an attempt that
// finds nothing is not counted.
func TestReconcilerResolutionsAreCounted(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	reader := &metrictest.Recorder{}
	var knows atomic.Bool
	g := guard.New(st, &guard.Options{Logger: slog.New(slog.DiscardHandler),
		MeterProvider: reader,
		Reconcilers: map[string]guard.Reconciler{"pay": func(context.Context, guard.ReconcileRequest) (ledger.Finding, error) {
			if !knows.Load() {
				return ledger.Finding{Verdict: ledger.VerdictUnknown, Evidence: "no row yet"}, nil
			}
			return ledger.Finding{Verdict: ledger.VerdictFound, Result: json.RawMessage(`{"content":[{"type":"text","text":"paid"}]}`)}, nil
		}}})
	t.Cleanup(func() {
		if err := g.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	lost := func(context.Context) guard.End { return guard.End{Err: errors.New("payments: commit lost")} }
	call := func(key string) guard.Answer {
		return g.Call(ctx, &guard.Request{Tool: "pay", Meta: map[string]any{wire.MetaKey: key}, Arguments: json.RawMessage(`{"amount":5}`)}, lost)
	}
	for _, key := range []string{"k-inline", "k-sweep"} {
		call(key)
	}
	// Inline: the reconciler finds nothing yet, then finds the payment.
	if a := call("k-inline"); a.Err == nil {
		t.Fatalf("call with no evidence = %+v; want UNKNOWN", a)
	}
	if got := resolvedBy(t, reader, ledger.MethodReconciler); got != 0 {
		t.Fatalf("resolved{reconciler} after an inconclusive attempt = %d; want 0", got)
	}
	knows.Store(true)
	if a := call("k-inline"); a.Err != nil {
		t.Fatalf("call once the reconciler knows = %v; want the found result", a.Err)
	}
	if got := resolvedBy(t, reader, ledger.MethodReconciler); got != 1 {
		t.Fatalf("resolved{reconciler} after the inline resolution = %d; want 1", got)
	}
	// The sweep settles k-sweep, which no call has met again.
	if n := g.ReconcileDue(ctx); n != 1 {
		t.Fatalf("ReconcileDue = %d settled; want 1", n)
	}
	if got := resolvedBy(t, reader, ledger.MethodReconciler); got != 2 {
		t.Errorf("resolved{reconciler} after the sweep = %d; want 2", got)
	}
}

// The sweep lists only the tools with a reconciler: UNKNOWN records of
// other tools, due before them and more than one sweep lists, never
// starve them.
func TestSweepIsNotStarvedByToolsWithoutReconciler(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	var asked atomic.Int64
	g := guard.New(st, &guard.Options{Logger: slog.New(slog.DiscardHandler), SweepLimit: 2,
		Reconcilers: map[string]guard.Reconciler{"pay": func(context.Context, guard.ReconcileRequest) (ledger.Finding, error) {
			asked.Add(1)
			return ledger.Finding{Verdict: ledger.VerdictNotRun, Evidence: "no payment, transaction rolled back"}, nil
		}}})
	t.Cleanup(func() {
		if err := g.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	lost := func(context.Context) guard.End { return guard.End{Err: errors.New("commit lost")} }
	for _, c := range []struct{ tool, key string }{{"mail", "m1"}, {"mail", "m2"}, {"mail", "m3"}, {"pay", "p1"}} {
		g.Call(ctx, &guard.Request{Tool: c.tool, Meta: map[string]any{wire.MetaKey: c.key}, Arguments: json.RawMessage(`{}`)}, lost)
	}
	if n := g.ReconcileDue(ctx); n != 1 || asked.Load() != 1 {
		t.Fatalf("ReconcileDue = %d settled, reconciler asked %d times; want 1 and 1", n, asked.Load())
	}
	rec, err := st.Get(ctx, ledger.ID{Tenant: guard.DefaultTenant, Layer: ledger.LayerServer, Tool: "pay", Key: "p1"})
	if err != nil || rec.State != ledger.StateRetryable {
		t.Errorf("pay p1 = %v, %v; want RETRYABLE", rec, err)
	}
}

// callsBy sums mcpledger.calls{outcome} as reader has it.
func callsBy(t *testing.T, reader *metrictest.Recorder, outcome ledger.Outcome) int64 {
	t.Helper()
	return reader.Sum(telemetry.MetricCalls, telemetry.AttrOutcome.String(string(outcome)))
}

// A request refused because its key's record is UNKNOWN counts as the
// outcome of UNKNOWN's row, like the call that left it UNKNOWN.
func TestRefusedDuplicateCountsItsRowsOutcome(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	reader := &metrictest.Recorder{}
	g := guard.New(st, &guard.Options{Logger: slog.New(slog.DiscardHandler),
		MeterProvider: reader})
	t.Cleanup(func() {
		if err := g.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	lost := func(context.Context) guard.End { return guard.End{Err: errors.New("payments: commit lost")} }
	for range 2 {
		a := g.Call(ctx, &guard.Request{Tool: "pay", Meta: map[string]any{wire.MetaKey: "k-1"}, Arguments: json.RawMessage(`{"amount":5}`)}, lost)
		var r *guard.Refusal
		if !errors.As(a.Err, &r) || r.Code != ledger.RowOf(ledger.StateUnknown).Code {
			t.Fatalf("call = %+v; want UNKNOWN's refusal", a)
		}
	}
	want := ledger.RowOf(ledger.StateUnknown).Outcome
	if got := callsBy(t, reader, want); got != 2 {
		t.Errorf("calls{outcome=%s} = %d; want 2 (the call and its refused repeat)", want, got)
	}
}
