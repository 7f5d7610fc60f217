package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func orderID(key string) ledger.ID {
	return ledger.ID{Layer: ledger.LayerServer, Tenant: server.DefaultTenant, Tool: "create_order", Key: key}
}

func TestAmbiguousEndingsAreUnknownUntilReconciled(t *testing.T) {
	tests := []struct {
		name string
		kind string
		h    handlerFunc
	}{
		{"panic", server.KindPanic, func(context.Context, *mcp.CallToolRequest, orderIn) (*mcp.CallToolResult, orderOut, error) {
			panic("charged the card, then fell over")
		}},
		{"go error from a raw handler", server.KindHandlerError, nil},
		{"handler's context error", server.KindCanceled, func(context.Context, *mcp.CallToolRequest, orderIn) (*mcp.CallToolResult, orderOut, error) {
			return nil, orderOut{}, context.DeadlineExceeded
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil, nil)
			r.handle = tc.h
			tool := "create_order"
			if tc.h == nil {
				// Typed handlers turn Go errors into isError results; a raw
				// handler's Go error reaches the client as a protocol error,
				// and whether it acted first is anyone's guess.
				tool = "raw_order"
				r.srv.AddTool(&mcp.Tool{Name: tool, InputSchema: json.RawMessage(`{"type":"object"}`)},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						r.runs.Add(1)
						return nil, errors.New("connection reset by downstream")
					})
			}
			cs := r.connect()
			ctx := context.Background()
			args := map[string]any{"item": "a", "qty": 1}
			for i := range 2 {
				_, err := callKey(ctx, cs, tool, "amb-1", args)
				if code, reason, _ := wireErr(err); code != -31003 || reason != "outcome_unknown" {
					t.Fatalf("call %d: %v (code %d, reason %q); want -31003 outcome_unknown", i+1, err, code, reason)
				}
			}
			if got := r.runs.Load(); got != 1 {
				t.Errorf("handler ran %d times; want 1", got)
			}
			id := ledger.ID{Layer: ledger.LayerServer, Tenant: server.DefaultTenant, Tool: tool, Key: "amb-1"}
			rec, err := r.store.Get(ctx, id)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if rec.State != ledger.StateUnknown || rec.ErrorKind != tc.kind {
				t.Fatalf("record = %s (%s); want UNKNOWN (%s)", rec.State, rec.ErrorKind, tc.kind)
			}
			want := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "order ord-a exists"}}}
			if _, err := server.Reconcile(ctx, r.store, id, server.Reconciliation{As: ledger.StateSucceeded, Result: want, Note: "found in the orders table"}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			res, err := callKey(ctx, cs, tool, "amb-1", args)
			if err != nil {
				t.Fatalf("after reconcile: %v", err)
			}
			if rp := replayOf(t, res); rp == nil || rp.State != ledger.StateSucceeded || body(t, res) != body(t, want) {
				t.Errorf("after reconcile got %s (marker %+v); want the reconciled result as a SUCCEEDED replay", body(t, res), rp)
			}
			if got := r.runs.Load(); got != 1 {
				t.Errorf("handler ran %d times after reconcile; want 1", got)
			}
		})
	}
}

func TestCanceledRequestLeavesUnknown(t *testing.T) {
	r := newRig(t, nil, nil)
	started := make(chan struct{})
	r.handle = func(ctx context.Context, _ *mcp.CallToolRequest, _ orderIn) (*mcp.CallToolResult, orderOut, error) {
		close(started)
		<-ctx.Done()
		return nil, orderOut{}, ctx.Err()
	}
	cs := r.connect()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := callKey(ctx, cs, "create_order", "cancel-1", map[string]any{"item": "a", "qty": 1})
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled call = %v; want context.Canceled", err)
	}
	// The client stops waiting at once; the server settles the record when
	// the cancellation reaches the handler.
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	rec, err := r.store.Wait(wctx, orderID("cancel-1"))
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if rec.State != ledger.StateUnknown || rec.ErrorKind != server.KindCanceled {
		t.Fatalf("record = %s (%s); want UNKNOWN (%s)", rec.State, rec.ErrorKind, server.KindCanceled)
	}
	_, err = callKey(context.Background(), cs, "create_order", "cancel-1", map[string]any{"item": "a", "qty": 1})
	if code, _, _ := wireErr(err); code != -31003 {
		t.Errorf("duplicate after cancel: %v; want -31003", err)
	}
}

// A handler's JSON-RPC refusal before it acts is read as a client reads
// it (ledger.Refusal): a request error is REJECTED, so the same key may
// come back corrected; -31002 is RETRYABLE.
func TestHandlerRejectionIsRejected(t *testing.T) {
	for _, tc := range []struct {
		code  int64
		state ledger.State
		kind  string
	}{
		{jsonrpc.CodeInvalidParams, ledger.StateRejected, ledger.KindRefused},
		{jsonrpc.CodeInvalidRequest, ledger.StateRejected, "jsonrpc_-32600"},
		{jsonrpc.CodeMethodNotFound, ledger.StateRejected, "jsonrpc_-32601"},
		{ledger.CodeInProgress, ledger.StateRetryable, "in_progress"},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			r := newRig(t, nil, nil)
			r.handle = func(context.Context, *mcp.CallToolRequest, orderIn) (*mcp.CallToolResult, orderOut, error) {
				return nil, orderOut{}, &jsonrpc.Error{Code: tc.code, Message: "qty exceeds stock"}
			}
			cs := r.connect()
			ctx := context.Background()
			for i := range 2 {
				_, err := callKey(ctx, cs, "create_order", "rej-1", map[string]any{"item": "a", "qty": 1})
				// go-sdk words a -32601 its own way; every other refusal
				// keeps the handler's message.
				if code, _, _ := wireErr(err); code != tc.code || (tc.code != jsonrpc.CodeMethodNotFound && !strings.Contains(err.Error(), "qty exceeds stock")) {
					t.Fatalf("call %d: %v; want the handler's %d", i+1, err, tc.code)
				}
			}
			// Nothing acted, so a retry asks the handler again rather than
			// replaying or blocking.
			if got := r.runs.Load(); got != 2 {
				t.Errorf("handler ran %d times; want 2", got)
			}
			rec, err := r.store.Get(ctx, orderID("rej-1"))
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if rec.State != tc.state || rec.ErrorKind != tc.kind {
				t.Errorf("record = %s (%s); want %s (%s)", rec.State, rec.ErrorKind, tc.state, tc.kind)
			}
		})
	}
}

func TestDeadOwnerLeaseBecomesUnknown(t *testing.T) {
	st := openStore(t)
	// The duplicate's wait for the execution is unbounded here: only the
	// dead owner's lease can end it, and ctx guards against a hang.
	r := newRig(t, st, &server.Options{InProgressWait: time.Hour})
	cs := r.connect()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	arguments := map[string]any{"item": "a", "qty": 1}
	raw, err := json.Marshal(arguments)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := args.Fingerprint(raw)
	if err != nil {
		t.Fatal(err)
	}
	// Another server process claimed the operation and died: its record
	// stays PROCESSING under a lease nobody renews.
	if _, err := st.Claim(ctx, ledger.ClaimRequest{ID: orderID("dead-1"), Fingerprint: fp, Owner: "dead-process", Lease: 200 * time.Millisecond}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	_, err = callKey(ctx, cs, "create_order", "dead-1", arguments)
	if ctx.Err() != nil {
		t.Fatalf("duplicate of a dead owner's call still waits after 2 minutes (%v); want -31003 once the 200ms lease ran out", err)
	}
	if code, reason, _ := wireErr(err); code != -31003 || reason != "outcome_unknown" {
		t.Fatalf("duplicate of a dead owner's call: %v; want -31003 outcome_unknown", err)
	}
	if got := r.runs.Load(); got != 0 {
		t.Errorf("handler ran %d times; want 0 (never re-executed silently)", got)
	}
	rec, err := st.Get(ctx, orderID("dead-1"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != ledger.StateUnknown || rec.ErrorKind != ledger.KindLeaseExpired {
		t.Errorf("record = %s (%s); want UNKNOWN (%s)", rec.State, rec.ErrorKind, ledger.KindLeaseExpired)
	}
}

func TestSweepExpiresDeadLeases(t *testing.T) {
	st := openStore(t)
	g := server.New(st, &server.Options{Logger: quietLogger()})
	ctx := context.Background()
	if _, err := st.Claim(ctx, ledger.ClaimRequest{ID: orderID("dead-2"), Fingerprint: "f", Owner: "dead-process", Lease: time.Millisecond}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	waitFor(t, "the 1ms lease to end", time.Second, func() bool {
		rec, err := st.Get(ctx, orderID("dead-2"))
		return err == nil && time.Now().After(rec.LeaseUntil)
	})
	if expired, _ := g.Sweep(ctx); expired != 1 {
		t.Errorf("Sweep expired %d records; want 1", expired)
	}
	rec, err := st.Get(ctx, orderID("dead-2"))
	if err != nil || rec.State != ledger.StateUnknown {
		t.Errorf("after Sweep: %v, %v; want UNKNOWN", rec, err)
	}
}

func TestLongHandlerKeepsItsLease(t *testing.T) {
	st := openStore(t)
	const lease = 150 * time.Millisecond
	r := newRig(t, st, &server.Options{Lease: lease, SweepEvery: 20 * time.Millisecond, InProgressWait: 30 * time.Second})
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	defer stopSweep()
	go r.guard.Run(sweepCtx)

	started, release := make(chan struct{}), make(chan struct{})
	r.handle = func(ctx context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		close(started)
		<-release
		return nil, orderOut{OrderID: "ord-" + in.Item}, nil
	}
	cs := r.connect()
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := callKey(ctx, cs, "create_order", "long-1", map[string]any{"item": "a", "qty": 1})
		done <- err
	}()
	<-started
	first, err := st.Get(ctx, orderID("long-1"))
	if err != nil {
		t.Fatal(err)
	}
	// Outlive the first lease several times over while the sweeper runs.
	waitFor(t, "the lease to be renewed past three lease lengths", 10*time.Second, func() bool {
		rec, err := st.Get(ctx, orderID("long-1"))
		return err == nil && rec.LeaseUntil.After(first.LeaseUntil.Add(3*lease))
	})
	rec, err := st.Get(ctx, orderID("long-1"))
	if err != nil || rec.State != ledger.StateProcessing {
		t.Fatalf("long handler's record = %v, %v; want still PROCESSING", rec, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("long call: %v", err)
	}
	rec, err = st.Get(ctx, orderID("long-1"))
	if err != nil || rec.State != ledger.StateSucceeded {
		t.Errorf("after the long handler: %v, %v; want SUCCEEDED", rec, err)
	}
}

func TestMultiRoundTripContinuationIsTheSameOperation(t *testing.T) {
	r := newRig(t, nil, nil)
	var acted, asked int
	r.handle = func(ctx context.Context, req *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		if len(req.Params.InputResponses) == 0 {
			asked++
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"confirm": &mcp.ElicitParams{Message: "Place the order?"},
			}}, orderOut{}, nil
		}
		if key, _ := server.KeyFromContext(ctx); key != "mrtr-1" {
			t.Errorf("continuation KeyFromContext = %q; want mrtr-1", key)
		}
		acted++
		return nil, orderOut{OrderID: "ord-" + in.Item}, nil
	}
	cs := connectTo(t, r.srv, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	ctx := context.Background()
	args := map[string]any{"item": "chair", "qty": 1}
	first, err := callKey(ctx, cs, "create_order", "mrtr-1", args)
	if err != nil {
		t.Fatalf("call with an input round: %v", err)
	}
	again, err := callKey(ctx, cs, "create_order", "mrtr-1", args)
	if err != nil {
		t.Fatalf("duplicate: %v", err)
	}
	if acted != 1 || asked != 1 {
		t.Errorf("handler asked %d times and acted %d times; want 1 and 1", asked, acted)
	}
	if replayOf(t, again) == nil || body(t, again) != body(t, first) {
		t.Errorf("duplicate = %s; want a replay of %s", body(t, again), body(t, first))
	}
	rec, err := r.store.Get(ctx, orderID("mrtr-1"))
	if err != nil || rec.State != ledger.StateSucceeded || rec.Attempts != 2 {
		t.Errorf("record = %+v, %v; want SUCCEEDED after 2 attempts (the question and the continuation)", rec, err)
	}
}

// A sweep purges at most Options.SweepLimit records past retention; the
// backlog goes at the next sweeps, and records still within retention
// stay.
func TestSweepIsBounded(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	settle := func(key string, retention time.Duration) {
		c, err := st.Claim(ctx, ledger.ClaimRequest{ID: orderID(key), Fingerprint: "f", Owner: "o", Retention: retention})
		if err != nil {
			t.Fatalf("Claim(%s): %v", key, err)
		}
		if _, err := st.Transition(ctx, ledger.Transition{ID: orderID(key), From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: "o", Fence: c.Record.Fence, AddAttempts: 1}); err != nil {
			t.Fatalf("Transition(%s): %v", key, err)
		}
	}
	for i := range 5 {
		settle(fmt.Sprintf("old-%d", i), time.Hour)
	}
	settle("young", 48*time.Hour)
	later := time.Now().Add(2 * time.Hour)
	g := server.New(st, &server.Options{Logger: quietLogger(), SweepLimit: 2, Now: func() time.Time { return later }})
	for i, want := range []int{2, 2, 1, 0} {
		if _, purged := g.Sweep(ctx); purged != want {
			t.Errorf("sweep %d purged %d records; want %d (at most SweepLimit 2 a sweep)", i+1, purged, want)
		}
	}
	if _, err := st.Get(ctx, orderID("young")); err != nil {
		t.Errorf("Get(young) after the sweeps = %v; want it kept", err)
	}
}
