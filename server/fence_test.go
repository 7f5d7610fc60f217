package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
)

func callFenced(ctx context.Context, cs *mcp.ClientSession, key string, fence int64, scope string, args any) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_order", Arguments: args,
		Meta: mcp.Meta{wire.MetaKey: key, wire.MetaFence: fence, wire.MetaFenceScope: scope}})
}

// A request whose fence is lower than one the server saw for the key comes
// from an owner that lost the key: it is refused and nothing runs. The
// handler sees the fence of its own call.
func TestStaleFenceRefused(t *testing.T) {
	r := newRig(t, nil, nil)
	var seen []wire.Fence
	r.handle = func(ctx context.Context, req *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		f, _ := server.FenceFromContext(ctx)
		seen = append(seen, f)
		return nil, orderOut{OrderID: "ord-" + in.Item}, nil
	}
	cs := r.connect()
	ctx := context.Background()
	args := map[string]any{"item": "x", "qty": 1}
	if _, err := callFenced(ctx, cs, "k-fence", 2, "s1", args); err != nil {
		t.Fatalf("call with fence 2 = %v", err)
	}
	_, err := callFenced(ctx, cs, "k-fence", 1, "s1", args)
	if code, reason, _ := wireErr(err); code != ledger.CodeInProgress || reason != ledger.ReasonStaleFence {
		t.Fatalf("call with stale fence 1 = %v (code %d, reason %q); want -31002 %s", err, code, reason, ledger.ReasonStaleFence)
	}
	if n := r.runs.Load(); n != 1 || len(seen) != 1 || seen[0] != (wire.Fence{Token: 2, Scope: "s1"}) {
		t.Fatalf("handler runs = %d with fences %v; want 1 run with fence 2 of scope s1", n, seen)
	}
	// Another ledger using the same key counts its own fences: its token 1
	// is not stale, and its request is answered from the key's record.
	res, err := callFenced(ctx, cs, "k-fence", 1, "s2", args)
	if err != nil || res.Meta[wire.MetaReplay] == nil {
		t.Fatalf("call with fence 1 of another scope = %v, %v; want a replay", res, err)
	}
	// The current owner's repeat is a plain replay.
	res, err = callFenced(ctx, cs, "k-fence", 2, "s2", args)
	if err != nil || res.Meta[wire.MetaReplay] == nil {
		t.Fatalf("repeat with fence 2 = %v, %v; want a replay", res, err)
	}
}

// Arguments the handler refuses with -32602 leave the key REJECTED, so the
// corrected request with the same key runs.
func TestHandlerRefusalRejects(t *testing.T) {
	r := newRig(t, nil, nil)
	r.handle = func(ctx context.Context, req *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		if in.Qty > 10 {
			return nil, orderOut{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "qty: at most 10"}
		}
		return nil, orderOut{OrderID: "ord-" + in.Item}, nil
	}
	cs := r.connect()
	ctx := context.Background()
	_, err := callKey(ctx, cs, "create_order", "k-fix", map[string]any{"item": "x", "qty": 11})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("refused call = %v; want -32602", err)
	}
	rec, err := r.store.Get(ctx, ledger.ID{Layer: ledger.LayerServer, Tenant: server.DefaultTenant, Tool: "create_order", Key: "k-fix"})
	if err != nil || rec.State != ledger.StateRejected {
		t.Fatalf("record after the refusal = %+v, %v; want REJECTED", rec, err)
	}
	res, err := callKey(ctx, cs, "create_order", "k-fix", map[string]any{"item": "x", "qty": 2})
	if err != nil || res.IsError {
		t.Fatalf("corrected call with the same key = %v, %v; want it to run", res, err)
	}
	if n := r.runs.Load(); n != 2 {
		t.Fatalf("handler runs = %d; want 2 (the refused one and the corrected one)", n)
	}
}

// A server killed mid-handler leaves PROCESSING; a duplicate on the same
// host finds the owner gone and answers outcome_unknown at once, without
// waiting for the lease.
func TestDeadServerOwnerIsUnknownAtOnce(t *testing.T) {
	r := newRig(t, nil, &server.Options{InProgressWait: time.Hour})
	ctx := context.Background()
	owner := ledgertest.DeadOwner(t, "payments")
	fp, err := args.Fingerprint([]byte(`{"item":"x","qty":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.Claim(ctx, ledger.ClaimRequest{ID: ledger.ID{Layer: ledger.LayerServer, Tenant: server.DefaultTenant, Tool: "create_order", Key: "k-dead"},
		Fingerprint: fp, Owner: owner, Lease: time.Hour}); err != nil {
		t.Fatal(err)
	}
	_, err = callKey(ctx, r.connect(), "create_order", "k-dead", map[string]any{"item": "x", "qty": 1})
	if code, reason, _ := wireErr(err); code != ledger.CodeOutcomeUnknown {
		t.Fatalf("duplicate of a dead owner's call = %v (code %d, %q); want -31003", err, code, reason)
	}
	if n := r.runs.Load(); n != 0 {
		t.Fatalf("handler runs = %d; want 0", n)
	}
}
