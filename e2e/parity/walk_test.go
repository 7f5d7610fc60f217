package parity_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/planner/ledgertools"
	"github.com/mcpledger/mcpledger/telemetry"
)

// TestStateWalk puts a record of the same call in each of the eight
// states into each adapter's ledger, makes the call again under its key,
// and compares what every consumer makes of the state: each adapter's
// answer (kind, state, exit code, model text), what it did (ran the tool
// or not) and the record it leaves must agree with each other and with
// the state's row (ledger.RowOf), and the ledger tools a model asks must
// report the state the record holds.
func TestStateWalk(t *testing.T) {
	allow := &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}}
	args := map[string]any{"amount": 5}
	const key = "walk-1"
	for _, s := range ledger.States {
		row := ledger.RowOf(s)
		t.Run(string(s), func(t *testing.T) {
			got := map[string]answer{}
			for _, ad := range adapters {
				ps := newPayServer(t)
				st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), ad.name+".db"), nil)
				if err != nil {
					t.Fatalf("sqlite.Open: %v", err)
				}
				t.Cleanup(func() { st.Close() })
				id := ledger.ID{Tenant: "default", Layer: ad.layer, Tool: "pay", Key: key}
				seedState(t, st, id, args, s)
				reader := sdkmetric.NewManualReader()
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
				t.Cleanup(func() { mp.Shutdown(context.Background()) })
				call := ad.start(t, ps, st, allow, mp)
				a, err := call(t.Context(), "pay", key, args)
				if err != nil {
					t.Fatalf("%s: %v", ad.name, err)
				}
				a.Runs = ps.runs.Load()
				rec, err := st.Get(t.Context(), id)
				if err != nil {
					t.Fatalf("%s: the record of %s: %v", ad.name, key, err)
				}
				a.Record = rec.State
				got[ad.name] = a

				var want answer
				switch row.Act {
				case ledger.ActReplay:
					want = answer{Kind: "replay", State: s, Record: s}
				case ledger.ActReclaim:
					want = answer{Kind: "result", State: ledger.StateSucceeded, Record: ledger.StateSucceeded, Runs: 1}
				case ledger.ActWait:
					want = answer{Kind: "error", State: s, Exit: row.Exit, Record: s}
				case ledger.ActReconcile:
					want = answer{Kind: "error", State: ledger.StateUnknown, Exit: row.Exit, Record: s}
				case ledger.ActDenied:
					want = answer{Kind: "error", State: ledger.StateDenied, Exit: row.Exit, Record: s}
				default:
					t.Fatalf("the row of %s names action %q, which this walk does not know", s, row.Act)
				}
				if a.Kind != want.Kind || a.State != want.State || a.Exit != want.Exit || a.Record != want.Record || a.Runs != want.Runs {
					t.Errorf("%s on a %s record = %s %q exit %d, record %s, %d runs; want %s %q exit %d, record %s, %d runs (text: %s)",
						ad.name, s, a.Kind, a.State, a.Exit, a.Record, a.Runs, want.Kind, want.State, want.Exit, want.Record, want.Runs, a.Text)
				}

				// Telemetry counts the call under the outcome of the row of
				// the state it answered with.
				wantOutcome := ledger.RowOf(a.State).Outcome
				if a.Kind == "replay" {
					wantOutcome = ledger.OutcomeReplayed
				}
				if o := callOutcome(t, reader); o != wantOutcome {
					t.Errorf("%s on a %s record: %s counted outcome %q; want %q", ad.name, s, telemetry.MetricCalls, o, wantOutcome)
				}

				// The model asks the ledger tools about the same record.
				out := ledgerStatus(t, st, ad.layer, key)
				if !out.Found || out.Call == nil || ledger.State(out.Call.State) != rec.State {
					t.Errorf("%s: ledger_status(%s) = %+v; want found in %s", ad.name, key, out, rec.State)
				}
			}
			ref := got[adapters[0].name]
			for _, ad := range adapters[1:] {
				if a := got[ad.name]; normal(a.Text) != normal(ref.Text) {
					t.Errorf("%s says %q; %s says %q", ad.name, a.Text, adapters[0].name, ref.Text)
				}
			}
		})
	}
}

// callOutcome is the outcome of the one call the reader's provider
// counted in mcpledger.calls.
func callOutcome(t *testing.T, reader *sdkmetric.ManualReader) ledger.Outcome {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect metrics: %v", err)
	}
	var outcomes []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != telemetry.MetricCalls {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("%s is a %T; want a sum", m.Name, m.Data)
			}
			for _, dp := range sum.DataPoints {
				v, _ := dp.Attributes.Value(telemetry.AttrOutcome)
				for range dp.Value {
					outcomes = append(outcomes, v.AsString())
				}
			}
		}
	}
	if len(outcomes) != 1 {
		t.Fatalf("%s counted %v; want one call", telemetry.MetricCalls, outcomes)
	}
	return ledger.Outcome(outcomes[0])
}

// seedState records a call of id in state s the way another process
// would have left it: a live lease held by someone else for PROCESSING, a
// queued call for PENDING_APPROVAL.
func seedState(t *testing.T, st ledger.Store, id ledger.ID, doc map[string]any, s ledger.State) {
	t.Helper()
	ctx := context.Background()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := args.Fingerprint(raw)
	if err != nil {
		t.Fatal(err)
	}
	owner := "elsewhere"
	if s == ledger.StatePendingApproval {
		owner = ledger.QueueOwner(false, "", "someone")
	}
	cl, err := st.Claim(ctx, ledger.ClaimRequest{
		ID: id, Session: "parity", Fingerprint: fp, Arguments: raw, Owner: owner, Lease: time.Hour,
		NeedsApproval: s == ledger.StatePendingApproval || s == ledger.StateDenied,
	})
	if err != nil || !cl.Won {
		t.Fatalf("Claim(%+v) = %+v, %v; want a win", id, cl, err)
	}
	to := func(tr ledger.Transition) {
		t.Helper()
		tr.ID, tr.Owner, tr.Fence = id, owner, cl.Record.Fence
		if _, err := st.Transition(ctx, tr); err != nil {
			t.Fatalf("Transition(%s -> %s) = %v", tr.From, tr.To, err)
		}
	}
	switch s {
	case ledger.StateProcessing, ledger.StatePendingApproval:
	case ledger.StateDenied:
		to(ledger.Transition{From: ledger.StatePendingApproval, To: s,
			Approval: &ledger.Approval{Decision: ledger.DecisionDenied, By: "ann", At: time.Now().UTC(), Reason: "not today"}})
	case ledger.StateSucceeded, ledger.StateFailed:
		res, err := json.Marshal(&mcp.CallToolResult{IsError: s == ledger.StateFailed, Content: []mcp.Content{&mcp.TextContent{Text: "paid 5 (payment 0)"}}})
		if err != nil {
			t.Fatal(err)
		}
		to(ledger.Transition{From: ledger.StateProcessing, To: s, Result: res, AddAttempts: 1})
	case ledger.StateRejected:
		to(ledger.Transition{From: ledger.StateProcessing, To: s, AddAttempts: 1, ErrorKind: ledger.KindRefused, ErrorMessage: "amount: want a number"})
	default:
		to(ledger.Transition{From: ledger.StateProcessing, To: s, AddAttempts: 1, ErrorKind: "seeded", ErrorMessage: "as another process left it"})
	}
}

// ledgerStatus asks ledger_status about key, as the model would, over
// the go-sdk ledger tools on the adapter's layer.
func ledgerStatus(t *testing.T, st ledger.Store, layer, key string) planner.StatusOutput {
	t.Helper()
	srv := ledgertools.NewServer(st, "default", "parity", &ledgertools.Options{Layer: layer})
	sst, cst := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), sst, nil)
	if err != nil {
		t.Fatalf("ledger tools Connect: %v", err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "model", Version: "v1"}, nil).Connect(t.Context(), cst, nil)
	if err != nil {
		t.Fatalf("model Connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: planner.StatusTool, Arguments: map[string]any{"key": key, "tool": "pay"}})
	if err != nil || res.IsError {
		t.Fatalf("ledger_status = %v, %v", res, err)
	}
	var out planner.StatusOutput
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("ledger_status structured content %s: %v", raw, err)
	}
	if !strings.Contains(goText(res), key) && out.Found {
		t.Errorf("ledger_status text %q does not name the key %s", goText(res), key)
	}
	return out
}
