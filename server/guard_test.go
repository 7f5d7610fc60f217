package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// claimCounter is the real store with a count of Claim calls and a channel
// closed when the count reaches at.
type claimCounter struct {
	ledger.Store
	at      int64
	n       atomic.Int64
	reached chan struct{}
}

func (s *claimCounter) Claim(ctx context.Context, req ledger.ClaimRequest) (ledger.Claim, error) {
	c, err := s.Store.Claim(ctx, req)
	if s.n.Add(1) == s.at {
		close(s.reached)
	}
	return c, err
}

func TestConcurrentDuplicatesRunOnce(t *testing.T) {
	const sessions, perSession = 5, 10
	store := &claimCounter{Store: openStore(t), at: sessions * perSession, reached: make(chan struct{})}
	r := newRig(t, store, &server.Options{InProgressWait: 30 * time.Second})
	// The winner holds the operation open until every call has claimed, so
	// all 49 others are duplicates of a running execution, not of a
	// finished one.
	r.handle = func(ctx context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		select {
		case <-store.reached:
		case <-ctx.Done():
			return nil, orderOut{}, ctx.Err()
		}
		return nil, orderOut{OrderID: "ord-" + in.Item}, nil
	}
	ctx := context.Background()
	results := make(chan *mcp.CallToolResult, sessions*perSession)
	errs := make(chan error, sessions*perSession)
	var wg sync.WaitGroup
	for range sessions {
		cs := r.connect()
		for range perSession {
			wg.Go(func() {
				res, err := callKey(ctx, cs, "create_order", "order-7", map[string]any{"item": "book", "qty": 2})
				if err != nil {
					errs <- err
					return
				}
				results <- res
			})
		}
	}
	wg.Wait()
	close(results)
	close(errs)
	for err := range errs {
		t.Errorf("CallTool: %v", err)
	}
	if got := r.runs.Load(); got != 1 {
		t.Fatalf("handler ran %d times; want 1", got)
	}
	var first string
	fresh, replays := 0, 0
	for res := range results {
		b := body(t, res)
		if first == "" {
			first = b
		}
		if b != first {
			t.Errorf("result %s; want every result equal to %s", b, first)
		}
		rp := replayOf(t, res)
		if rp == nil {
			fresh++
			continue
		}
		replays++
		if rp.Key != "order-7" || rp.State != ledger.StateSucceeded || rp.Attempts != 1 {
			t.Errorf("replay marker = %+v; want key order-7, SUCCEEDED, 1 attempt", rp)
		}
	}
	if fresh != 1 || replays != sessions*perSession-1 {
		t.Errorf("%d fresh and %d replayed results; want 1 and %d", fresh, replays, sessions*perSession-1)
	}
}

func TestKeyReusedWithOtherArguments(t *testing.T) {
	r := newRig(t, nil, nil)
	cs := r.connect()
	ctx := context.Background()
	if _, err := callKey(ctx, cs, "create_order", "k-1", map[string]any{"item": "book", "qty": 1}); err != nil {
		t.Fatalf("first call: %v", err)
	}
	before, err := r.store.Get(ctx, ledger.ID{Layer: ledger.LayerServer, Tenant: server.DefaultTenant, Tool: "create_order", Key: "k-1"})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	_, err = callKey(ctx, cs, "create_order", "k-1", map[string]any{"item": "book", "qty": 5})
	if code, reason, _ := wireErr(err); code != -31001 || reason != "key_reused" {
		t.Fatalf("same key, other arguments: err = %v (code %d, reason %q); want -31001 key_reused", err, code, reason)
	}
	if got := r.runs.Load(); got != 1 {
		t.Errorf("handler ran %d times; want 1", got)
	}
	after, err := r.store.Get(ctx, before.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if after.Fingerprint != before.Fingerprint || string(after.Result) != string(before.Result) || after.State != before.State {
		t.Errorf("record changed by a rejected reuse: %+v -> %+v", before, after)
	}
	// Argument order and number spelling do not make a new request.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_order", Meta: mcp.Meta{wire.MetaKey: "k-1"},
		Arguments: json.RawMessage(`{"qty": 1.0, "item": "book"}`)})
	if err != nil {
		t.Fatalf("equivalent arguments: %v", err)
	}
	if replayOf(t, res) == nil {
		t.Errorf("equivalent arguments got a fresh result; want a replay")
	}
}

func TestKeyAndArgumentErrors(t *testing.T) {
	long := strings.Repeat("k", 256)
	tests := []struct {
		name   string
		meta   mcp.Meta
		args   any
		code   int64
		reason string
		inMsg  string
	}{
		{"missing key", nil, map[string]any{"item": "a", "qty": 1}, -31004, "key_required", wire.MetaKey},
		{"empty key", mcp.Meta{wire.MetaKey: ""}, map[string]any{"item": "a", "qty": 1}, -31004, "key_invalid", "empty key"},
		{"oversized key", mcp.Meta{wire.MetaKey: long}, map[string]any{"item": "a", "qty": 1}, -31004, "key_invalid", "256 bytes"},
		{"bad bytes", mcp.Meta{wire.MetaKey: "order 7/ü"}, map[string]any{"item": "a", "qty": 1}, -31004, "key_invalid", "byte 0x20"},
		{"key not a string", mcp.Meta{wire.MetaKey: 42}, map[string]any{"item": "a", "qty": 1}, -31004, "key_invalid", "not a string"},
		{"conflicting keys", mcp.Meta{wire.MetaKey: "a-1"}, map[string]any{"item": "a", "qty": 1, "idempotency_key": "b-2"}, -31004, "key_invalid", "different keys"},
		{"argument key not a string", nil, map[string]any{"item": "a", "qty": 1, "idempotency_key": 7}, -31004, "key_invalid", "not a string"},
		{"wrong argument type", mcp.Meta{wire.MetaKey: "a-1"}, map[string]any{"item": "a", "qty": "two"}, jsonrpc.CodeInvalidParams, "", "invalid arguments"},
		{"arguments not an object", mcp.Meta{wire.MetaKey: "a-1"}, []int{1, 2}, jsonrpc.CodeInvalidParams, "", "JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil, nil)
			cs := r.connect()
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_order", Meta: tc.meta, Arguments: tc.args})
			code, reason, _ := wireErr(err)
			if code != tc.code || reason != tc.reason {
				t.Fatalf("CallTool(%s) = %v (code %d, reason %q); want code %d reason %q", tc.name, err, code, reason, tc.code, tc.reason)
			}
			if !strings.Contains(err.Error(), tc.inMsg) {
				t.Errorf("error %q does not mention %q", err, tc.inMsg)
			}
			if got := r.runs.Load(); got != 0 {
				t.Errorf("handler ran %d times; want 0", got)
			}
			if recs := tenantRecords(t, r.store, server.DefaultTenant); len(recs) != 0 {
				t.Errorf("%d records stored; want none", len(recs))
			}
		})
	}
}

func TestKeyAsArgument(t *testing.T) {
	r := newRig(t, nil, nil)
	var seen atomic.Value
	r.handle = func(ctx context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		k, _ := server.KeyFromContext(ctx)
		seen.Store(k)
		return nil, orderOut{OrderID: "ord-" + in.Item}, nil
	}
	cs := r.connect()
	ctx := context.Background()
	args := map[string]any{"item": "pen", "qty": 1, "idempotency_key": "arg-key-1"}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_order", Arguments: args}); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if got := seen.Load(); got != "arg-key-1" {
		t.Errorf("KeyFromContext in handler = %v; want arg-key-1", got)
	}
	// The same key in _meta names the same operation.
	res, err := callKey(ctx, cs, "create_order", "arg-key-1", map[string]any{"item": "pen", "qty": 1})
	if err != nil {
		t.Fatalf("CallTool with _meta key: %v", err)
	}
	if replayOf(t, res) == nil || r.runs.Load() != 1 {
		t.Errorf("key in _meta after key in arguments: runs %d, replay %v; want 1 run and a replay", r.runs.Load(), replayOf(t, res))
	}
	if _, ok := server.KeyFromContext(ctx); ok {
		t.Errorf("KeyFromContext outside a guarded call reports a key")
	}
}

func TestReadOnlyAndUnknownToolsPassThrough(t *testing.T) {
	r := newRig(t, nil, nil)
	cs := r.connect()
	ctx := context.Background()
	for range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_orders"})
		if err != nil {
			t.Fatalf("read-only tool without key: %v", err)
		}
		if replayOf(t, res) != nil {
			t.Errorf("read-only tool result carries a replay marker")
		}
	}
	_, err := callKey(ctx, cs, "no_such_tool", "k-9", map[string]any{})
	if code, _, _ := wireErr(err); code != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown tool: err = %v (code %d); want the SDK's %d", err, code, jsonrpc.CodeInvalidParams)
	}
	if recs := tenantRecords(t, r.store, server.DefaultTenant); len(recs) != 0 {
		t.Errorf("%d records stored; want none", len(recs))
	}
}

func TestToolPolicyModes(t *testing.T) {
	r := newRig(t, nil, &server.Options{Tools: ledger.Tools{
		"create_order": {ReadOnly: true},
		"list_orders":  {Keyed: true},
	}})
	cs := r.connect()
	ctx := context.Background()
	if _, err := callKey(ctx, cs, "create_order", "", map[string]any{"item": "a", "qty": 1}); err != nil {
		t.Errorf("ReadOnly tool without key: %v", err)
	}
	_, err := callKey(ctx, cs, "list_orders", "", nil)
	if code, reason, _ := wireErr(err); code != -31004 || reason != "key_required" {
		t.Errorf("Keyed read-only tool without key: %v; want -31004 key_required", err)
	}
}

func TestToolErrorIsStoredAndReplayed(t *testing.T) {
	r := newRig(t, nil, nil)
	r.handle = func(ctx context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		return server.ToolError(fmt.Errorf("out of stock: %s", in.Item)), orderOut{}, nil
	}
	cs := r.connect()
	ctx := context.Background()
	first, err := callKey(ctx, cs, "create_order", "k-2", map[string]any{"item": "lamp", "qty": 1})
	if err != nil || !first.IsError {
		t.Fatalf("first call = %v, %v; want an isError result", first, err)
	}
	again, err := callKey(ctx, cs, "create_order", "k-2", map[string]any{"item": "lamp", "qty": 1})
	if err != nil {
		t.Fatalf("duplicate: %v", err)
	}
	if rp := replayOf(t, again); rp == nil || rp.State != ledger.StateFailed {
		t.Errorf("duplicate replay marker = %+v; want state FAILED", rp)
	}
	if body(t, again) != body(t, first) || r.runs.Load() != 1 {
		t.Errorf("duplicate = %s after %d runs; want %s after 1 run", body(t, again), r.runs.Load(), body(t, first))
	}
	rec, err := r.store.Get(ctx, ledger.ID{Layer: ledger.LayerServer, Tenant: server.DefaultTenant, Tool: "create_order", Key: "k-2"})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if rec.ErrorKind != server.KindToolError || !strings.Contains(rec.ErrorMessage, "out of stock") {
		t.Errorf("record error = %q %q; want %q with the tool's message", rec.ErrorKind, rec.ErrorMessage, server.KindToolError)
	}
}

func TestInProgressThenReplay(t *testing.T) {
	r := newRig(t, nil, &server.Options{InProgressWait: 50 * time.Millisecond, RetryAfter: 700 * time.Millisecond})
	started, release := make(chan struct{}), make(chan struct{})
	r.handle = func(ctx context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		close(started)
		<-release
		return nil, orderOut{OrderID: "ord-" + in.Item}, nil
	}
	cs := r.connect()
	ctx := context.Background()
	args := map[string]any{"item": "desk", "qty": 1}
	firstDone := make(chan error, 1)
	go func() {
		_, err := callKey(ctx, cs, "create_order", "k-3", args)
		firstDone <- err
	}()
	<-started
	_, err := callKey(ctx, cs, "create_order", "k-3", args)
	code, reason, after := wireErr(err)
	if code != -31002 || reason != "in_progress" || after != 700 {
		t.Fatalf("duplicate while running: %v (code %d, reason %q, retryAfterMs %d); want -31002 in_progress 700", err, code, reason, after)
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatalf("first call: %v", err)
	}
	res, err := callKey(ctx, cs, "create_order", "k-3", args)
	if err != nil || replayOf(t, res) == nil {
		t.Fatalf("duplicate after completion = %v, %v; want a replay", res, err)
	}
	if got := r.runs.Load(); got != 1 {
		t.Errorf("handler ran %d times; want 1", got)
	}
}

func TestTenantsAreSeparate(t *testing.T) {
	r := newRig(t, nil, &server.Options{Tenant: func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		who, _ := req.Params.Meta["tenant"].(string)
		if who == "" {
			return "", &jsonrpc.Error{Code: -32001, Message: "unauthenticated"}
		}
		return who, nil
	}})
	cs := r.connect()
	ctx := context.Background()
	call := func(tenant string) error {
		meta := mcp.Meta{wire.MetaKey: "same-key"}
		if tenant != "" {
			meta["tenant"] = tenant
		}
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_order", Meta: meta, Arguments: map[string]any{"item": "a", "qty": 1}})
		return err
	}
	for _, tenant := range []string{"acme", "globex", "acme"} {
		if err := call(tenant); err != nil {
			t.Fatalf("call as %s: %v", tenant, err)
		}
	}
	if got := r.runs.Load(); got != 2 {
		t.Errorf("handler ran %d times for two tenants; want 2", got)
	}
	if code, _, _ := wireErr(call("")); code != -32001 {
		t.Errorf("tenant function error: code %d; want the function's -32001", code)
	}
}

func TestCapabilityAdvertised(t *testing.T) {
	r := newRig(t, nil, &server.Options{Retention: 2 * time.Hour})
	cs := r.connect()
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		t.Fatalf("no capabilities in the initialize result")
	}
	v, ok := caps.Experimental[wire.Capability].(map[string]any)
	if !ok {
		t.Fatalf("experimental capabilities = %v; want %q", caps.Experimental, wire.Capability)
	}
	if v["version"] != 1.0 || v["retentionSeconds"] != 7200.0 {
		t.Errorf("capability = %v; want version 1, retentionSeconds 7200", v)
	}
	want := map[string]any{wire.Capability: map[string]any{"version": 1, "retentionSeconds": int64(60)}}
	if got := server.Capability(time.Minute); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Capability(1m) = %v; want %v", got, want)
	}
}

func TestLargeResultIsCompacted(t *testing.T) {
	r := newRig(t, nil, &server.Options{MaxResult: 512})
	r.handle = func(ctx context.Context, _ *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: strings.Repeat("x", 4096)},
			&mcp.ResourceLink{URI: "orders://ord-1", Name: "ord-1"},
		}}, orderOut{OrderID: "ord-1"}, nil
	}
	cs := r.connect()
	ctx := context.Background()
	args := map[string]any{"item": "a", "qty": 1}
	if _, err := callKey(ctx, cs, "create_order", "big-1", args); err != nil {
		t.Fatalf("first call: %v", err)
	}
	res, err := callKey(ctx, cs, "create_order", "big-1", args)
	if err != nil {
		t.Fatalf("duplicate: %v", err)
	}
	rp := replayOf(t, res)
	if rp == nil || !rp.Compacted {
		t.Fatalf("replay marker = %+v; want compacted", rp)
	}
	var link bool
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok && l.URI == "orders://ord-1" {
			link = true
		}
	}
	if !link || res.StructuredContent == nil {
		t.Errorf("compacted replay %s lost the resource link or the structured content", body(t, res))
	}
}

func TestTenantValidation(t *testing.T) {
	r := newRig(t, nil, &server.Options{Tenant: func(context.Context, *mcp.CallToolRequest) (string, error) {
		return "bad tenant", nil
	}})
	cs := r.connect()
	_, err := callKey(context.Background(), cs, "create_order", "k-1", map[string]any{"item": "a", "qty": 1})
	if err == nil || r.runs.Load() != 0 {
		t.Fatalf("invalid tenant: err %v after %d runs; want an error and no run", err, r.runs.Load())
	}
	if !strings.Contains(err.Error(), "tenant") {
		t.Errorf("invalid tenant error %q does not mention the tenant", err)
	}
}
