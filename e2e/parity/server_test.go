package parity_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	mgmcp "github.com/mark3labs/mcp-go/mcp"
	mgserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcpgo"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
)

// The server parity test: one table of scenarios, run through a go-sdk
// server guarded by package server and an mcp-go server guarded by
// package mcpgo, both adapters of the one core (package guard), each on a
// ledger of its own and asked by the same bare go-sdk client over
// streamable HTTP. Both must answer with the same JSON-RPC code and
// data.reason, leave the same record, run the handler as often, and count
// the same telemetry outcome.

// behaviour is what the pay handler does on its next run.
type behaviour int

const (
	payOK       behaviour = iota // a result
	payDeclined                  // an isError result: the tool said no
	payGoError                   // a Go error: the outcome is unknown
	payPanic                     // a panic
	payNotRun                    // ErrNotRun: nothing happened
	payHold                      // a result, once the test lets it go
)

// payTool is the counted tool both servers serve.
type payTool struct {
	runs    atomic.Int64
	next    atomic.Int64 // a behaviour
	started chan struct{}
	release chan struct{}
	// finds is what the reconciler finds next: a ledger.Verdict, or
	// "error" for a reconciler that fails.
	finds atomic.Value
}

// reconcile is pay's reconciler on either SDK: it finds what finds says.
func (p *payTool) reconcile(_ context.Context, req guard.ReconcileRequest) (ledger.Finding, error) {
	v, _ := p.finds.Load().(string)
	switch ledger.Verdict(v) {
	case "error":
		return ledger.Finding{}, errors.New("payments: the payments table is locked")
	case ledger.VerdictFound:
		return ledger.Finding{Verdict: ledger.VerdictFound, Evidence: "payment pay_1 has key " + req.Key,
			Result: json.RawMessage(`{"content":[{"type":"text","text":"paid 5 (payment 1, found)"}]}`)}, nil
	case ledger.VerdictFailed, ledger.VerdictNotRun:
		return ledger.Finding{Verdict: ledger.Verdict(v), Evidence: "no payment has key " + req.Key}, nil
	}
	return ledger.Finding{Verdict: ledger.VerdictUnknown, Evidence: "the payments table is not reachable"}, nil
}

func newPayTool() *payTool {
	return &payTool{started: make(chan struct{}, 1), release: make(chan struct{})}
}

// run is the handler's body on either SDK: the text of a result, whether
// it is the tool's "no", or a Go error; a panic for payPanic.
func (p *payTool) run(ctx context.Context, amount int) (text string, isError bool, err error) {
	n := p.runs.Add(1)
	switch behaviour(p.next.Load()) {
	case payDeclined:
		return fmt.Sprintf("declined %d", amount), true, nil
	case payGoError:
		return "", false, errors.New("payments: commit lost: connection reset")
	case payPanic:
		panic("payments: nil ledger entry")
	case payNotRun:
		return "", false, fmt.Errorf("payments: rolled back: %w", guard.ErrNotRun)
	case payHold:
		p.started <- struct{}{}
		select {
		case <-p.release:
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
	}
	return fmt.Sprintf("paid %d (payment %d)", amount, n), false, nil
}

// guardedServer is one SDK's guarded server of payTool.
type guardedServer struct {
	name  string
	start func(t *testing.T, p *payTool, st ledger.Store, mp *sdkmetric.MeterProvider) string // the endpoint
}

const serverWait = 100 * time.Millisecond

var guardedServers = []guardedServer{
	{name: "go-sdk", start: startGoSDKServer},
	{name: "mcp-go", start: startMCPGoServer},
}

type payIn struct {
	Amount int `json:"amount"`
}

func startGoSDKServer(t *testing.T, p *payTool, st ledger.Store, mp *sdkmetric.MeterProvider) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "pay"}, func(ctx context.Context, _ *mcp.CallToolRequest, in payIn) (*mcp.CallToolResult, any, error) {
		text, isError, err := p.run(ctx, in.Amount)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	g := server.New(st, &server.Options{InProgressWait: serverWait, Logger: slog.New(slog.DiscardHandler), MeterProvider: mp,
		Reconcilers: map[string]server.Reconciler{"pay": p.reconcile}})
	t.Cleanup(func() {
		if err := g.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	s.AddReceivingMiddleware(g.Middleware())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func startMCPGoServer(t *testing.T, p *payTool, st ledger.Store, mp *sdkmetric.MeterProvider) string {
	g := mcpgo.NewGuard(st, &mcpgo.ServerOptions{InProgressWait: serverWait, MeterProvider: mp,
		Reconcilers: map[string]guard.Reconciler{"pay": p.reconcile}})
	t.Cleanup(func() {
		if err := g.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	s := mgserver.NewMCPServer("payments", "v1", g.ServerOptions()...)
	s.AddTool(mgmcp.NewTool("pay", mgmcp.WithNumber("amount")), func(ctx context.Context, req mgmcp.CallToolRequest) (*mgmcp.CallToolResult, error) {
		text, isError, err := p.run(ctx, req.GetInt("amount", 0))
		if err != nil {
			return nil, err
		}
		if isError {
			return mgmcp.NewToolResultError(text), nil
		}
		return mgmcp.NewToolResultText(text), nil
	})
	srv := httptest.NewServer(g.Handler(mgserver.NewStreamableHTTPServer(s)))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// serverAnswer is what one call to a guarded server came back with.
type serverAnswer struct {
	// Code is the JSON-RPC error's code (0: a result); Reason its
	// data.reason.
	Code   int64
	Reason string
	// Replay: the result carries the replay marker; IsError: it is isError.
	Replay, IsError bool
	// Record is the state of the server's record of the key.
	Record ledger.State
	// Runs is the handler's execution count after the call.
	Runs int64
	// Outcome is the telemetry outcome the server counted for the call.
	Outcome ledger.Outcome
}

// serverStep is one call of a scenario.
type serverStep struct {
	do     behaviour
	amount int   // 5 when zero
	fence  int64 // sent in _meta when positive
	// finds is what the tool's reconciler finds when the call meets an
	// UNKNOWN record ("": nothing, an unknown finding).
	finds ledger.Verdict
	// before runs ahead of the call (a person reconciles the record).
	before func(t *testing.T, st ledger.Store, id ledger.ID)
	// during: the call is made while this step's handler holds (payHold),
	// and this is its answer.
	during *serverStep
	want   serverAnswer
}

func reconcileAsPaid(t *testing.T, st ledger.Store, id ledger.ID) {
	t.Helper()
	res := json.RawMessage(`{"content":[{"type":"text","text":"paid 5 (found by a person)"}]}`)
	if _, err := guard.Reconcile(t.Context(), st, id, guard.Reconciliation{As: ledger.StateSucceeded, By: "ops", Note: "in the payments table", Result: res}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
}

func TestServerParity(t *testing.T) {
	unknown := serverAnswer{Code: ledger.CodeOutcomeUnknown, Reason: ledger.ReasonOutcomeUnknown, Record: ledger.StateUnknown, Runs: 1, Outcome: ledger.OutcomeUnknown}
	for _, sc := range []struct {
		name  string
		steps []serverStep
	}{
		{"ok", []serverStep{
			{do: payOK, want: serverAnswer{Record: ledger.StateSucceeded, Runs: 1, Outcome: ledger.OutcomeSucceeded}},
			{do: payOK, want: serverAnswer{Replay: true, Record: ledger.StateSucceeded, Runs: 1, Outcome: ledger.OutcomeReplayed}},
		}},
		{"isError", []serverStep{
			{do: payDeclined, want: serverAnswer{IsError: true, Record: ledger.StateFailed, Runs: 1, Outcome: ledger.OutcomeFailed}},
			{do: payOK, want: serverAnswer{Replay: true, IsError: true, Record: ledger.StateFailed, Runs: 1, Outcome: ledger.OutcomeReplayed}},
		}},
		{"go error", []serverStep{{do: payGoError, want: unknown}}},
		{"panic", []serverStep{{do: payPanic, want: unknown}}},
		{"not-run refusal", []serverStep{
			{do: payNotRun, want: serverAnswer{Code: ledger.CodeInProgress, Reason: ledger.ReasonNotRun, Record: ledger.StateRetryable, Runs: 1, Outcome: ledger.OutcomeNotSent}},
			{do: payOK, want: serverAnswer{Record: ledger.StateSucceeded, Runs: 2, Outcome: ledger.OutcomeSucceeded}},
		}},
		{"key reuse", []serverStep{
			{do: payOK, want: serverAnswer{Record: ledger.StateSucceeded, Runs: 1, Outcome: ledger.OutcomeSucceeded}},
			{do: payOK, amount: 6, want: serverAnswer{Code: ledger.CodeKeyReused, Reason: ledger.ReasonKeyReused, Record: ledger.StateSucceeded, Runs: 1, Outcome: ledger.OutcomeKeyConflict}},
		}},
		{"in progress", []serverStep{
			{do: payHold,
				during: &serverStep{do: payOK, want: serverAnswer{Code: ledger.CodeInProgress, Reason: ledger.ReasonInProgress, Record: ledger.StateProcessing, Runs: 1, Outcome: ledger.OutcomeInProgress}},
				want:   serverAnswer{Record: ledger.StateSucceeded, Runs: 1, Outcome: ledger.OutcomeSucceeded}},
		}},
		{"stale fence", []serverStep{
			{do: payOK, fence: 5, want: serverAnswer{Record: ledger.StateSucceeded, Runs: 1, Outcome: ledger.OutcomeSucceeded}},
			{do: payOK, fence: 3, want: serverAnswer{Code: ledger.CodeInProgress, Reason: ledger.ReasonStaleFence, Record: ledger.StateSucceeded, Runs: 1, Outcome: ledger.OutcomeInProgress}},
		}},
		{"UNKNOWN", []serverStep{
			{do: payGoError, want: unknown},
			{do: payOK, want: unknown},
			{do: payOK, amount: 6, want: serverAnswer{Code: ledger.CodeKeyReused, Reason: ledger.ReasonKeyReused, Record: ledger.StateUnknown, Runs: 1, Outcome: ledger.OutcomeKeyConflict}},
		}},
		{"reconciled by a person", []serverStep{
			{do: payGoError, want: unknown},
			{do: payOK, before: reconcileAsPaid, want: serverAnswer{Replay: true, Record: ledger.StateSucceeded, Runs: 1, Outcome: ledger.OutcomeReplayed}},
		}},
		{"reconciler finds it", []serverStep{
			{do: payGoError, finds: ledger.VerdictFound, want: unknown},
			{do: payOK, finds: ledger.VerdictFound, want: serverAnswer{Replay: true, Record: ledger.StateSucceeded, Runs: 1, Outcome: ledger.OutcomeReplayed}},
			{do: payOK, want: serverAnswer{Replay: true, Record: ledger.StateSucceeded, Runs: 1, Outcome: ledger.OutcomeReplayed}},
		}},
		{"reconciler finds it failed", []serverStep{
			{do: payPanic, want: unknown},
			{do: payOK, finds: ledger.VerdictFailed, want: serverAnswer{Replay: true, IsError: true, Record: ledger.StateFailed, Runs: 1, Outcome: ledger.OutcomeReplayed}},
		}},
		{"reconciler finds it not run", []serverStep{
			{do: payGoError, want: unknown},
			{do: payOK, finds: ledger.VerdictNotRun, want: serverAnswer{Record: ledger.StateSucceeded, Runs: 2, Outcome: ledger.OutcomeSucceeded}},
		}},
		{"reconciler fails", []serverStep{
			{do: payGoError, want: unknown},
			{do: payOK, finds: "error", want: unknown},
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			for _, gs := range guardedServers {
				t.Run(gs.name, func(t *testing.T) {
					runServerScenario(t, gs, sc.steps)
				})
			}
		})
	}
}

func runServerScenario(t *testing.T, gs guardedServer, steps []serverStep) {
	p := newPayTool()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "server.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	url := gs.start(t, p, st, mp)
	session, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).
		Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	const key = "server-parity-1"
	id := ledger.ID{Tenant: guard.DefaultTenant, Layer: ledger.LayerServer, Tool: "pay", Key: key}
	counted := outcomeCounts(t, reader)
	check := func(i int, s serverStep, a serverAnswer) {
		t.Helper()
		rec, err := st.Get(t.Context(), id)
		if err != nil {
			t.Fatalf("step %d: the record of %s: %v", i, key, err)
		}
		a.Record = rec.State
		if a != s.want {
			t.Errorf("step %d = %+v; want %+v", i, a, s.want)
		}
	}
	for i, s := range steps {
		if s.before != nil {
			s.before(t, st, id)
		}
		p.next.Store(int64(s.do))
		p.finds.Store(string(s.finds))
		if s.during == nil {
			a := callServer(t, session, key, s)
			a.Runs = p.runs.Load()
			a.Outcome, counted = newOutcome(t, reader, counted)
			check(i, s, a)
			continue
		}
		done := make(chan serverAnswer, 1)
		go func() { done <- callServer(t, session, key, s) }()
		<-p.started
		p.next.Store(int64(s.during.do))
		d := callServer(t, session, key, *s.during)
		d.Runs = p.runs.Load()
		d.Outcome, counted = newOutcome(t, reader, counted)
		check(i, *s.during, d)
		close(p.release)
		a := <-done
		a.Runs = p.runs.Load()
		a.Outcome, counted = newOutcome(t, reader, counted)
		check(i, s, a)
	}
}

// callServer calls pay with the key and reads the answer.
func callServer(t *testing.T, session *mcp.ClientSession, key string, s serverStep) serverAnswer {
	amount := s.amount
	if amount == 0 {
		amount = 5
	}
	meta := mcp.Meta{wire.MetaKey: key}
	if s.fence > 0 {
		meta[wire.MetaFence] = s.fence
	}
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "pay", Arguments: map[string]any{"amount": amount}, Meta: meta})
	if err != nil {
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			t.Errorf("call: %v; want a result or a JSON-RPC error", err)
			return serverAnswer{}
		}
		var d wire.ErrorData
		if len(je.Data) > 0 {
			if err := json.Unmarshal(je.Data, &d); err != nil {
				t.Errorf("error data %s: %v", je.Data, err)
			}
		}
		return serverAnswer{Code: je.Code, Reason: d.Reason}
	}
	_, replayed := res.Meta[wire.MetaReplay]
	return serverAnswer{Replay: replayed, IsError: res.IsError}
}

// outcomeCounts is how many calls the server counted per outcome so far.
func outcomeCounts(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect metrics: %v", err)
	}
	counts := map[string]int64{}
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
				counts[v.AsString()] += dp.Value
			}
		}
	}
	return counts
}

// newOutcome is the outcome of the one call counted since before.
func newOutcome(t *testing.T, reader *sdkmetric.ManualReader, before map[string]int64) (ledger.Outcome, map[string]int64) {
	t.Helper()
	now := outcomeCounts(t, reader)
	var got []string
	for o, n := range now {
		for range n - before[o] {
			got = append(got, o)
		}
	}
	if len(got) != 1 {
		t.Errorf("%s counted %v since the last call; want one call", telemetry.MetricCalls, got)
		return "", now
	}
	return ledger.Outcome(got[0]), now
}
