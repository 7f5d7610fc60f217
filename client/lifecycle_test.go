package client_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
)

// ask is a policy that asks before every write.
func ask() *confirm.Policy {
	return &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Ask}}}
}

// answers is a confirmer that returns its answer, or its error.
type answers struct {
	ans confirm.Answer
	err error
}

func (a answers) Confirm(context.Context, confirm.Request) (confirm.Answer, error) {
	return a.ans, a.err
}

var approveOnce = answers{ans: confirm.Answer{Decision: ledger.DecisionApproved, By: "ops"}}

// A call no one could confirm is REJECTED, not DENIED: the same key runs
// once someone answers.
func TestNoConfirmerRejectsThenAnswerRuns(t *testing.T) {
	f := newFixture(t, nil, &client.Options{Policy: ask()})
	ctx := client.WithKey(context.Background(), "order-7")
	_, err := f.c.CallTool(ctx, write("a", 1))
	if !errors.Is(err, client.ErrRejected) || !errors.Is(err, confirm.ErrNoConfirmer) {
		t.Fatalf("CallTool without a confirmer = %v; want ErrRejected wrapping ErrNoConfirmer", err)
	}
	if r := record(t, f.store, "write", "order-7"); r.State != ledger.StateRejected || r.ErrorKind != ledger.KindNoAnswer {
		t.Fatalf("record after no answer = %s %q; want REJECTED %q", r.State, r.ErrorKind, ledger.KindNoAnswer)
	}
	if n := f.srv.TotalExecutions(); n != 0 {
		t.Fatalf("executions after no answer = %d; want 0", n)
	}
	res, err := f.c.CallTool(client.WithConfirmer(ctx, approveOnce), write("a", 1))
	if err != nil || res.IsError {
		t.Fatalf("CallTool with an answer = %v, %v; want a result", res, err)
	}
	if n := f.srv.Executions("order-7"); n != 1 {
		t.Fatalf("executions of order-7 = %d; want 1", n)
	}
}

// Ctrl-C at the prompt (the prompt's context ends) records nothing final.
func TestAbortedPromptRecordsNothingFinal(t *testing.T) {
	f := newFixture(t, nil, &client.Options{Policy: ask(), Confirmer: answers{err: context.Canceled}})
	ctx := client.WithKey(context.Background(), "order-8")
	_, err := f.c.CallTool(ctx, write("a", 1))
	if !errors.Is(err, client.ErrRejected) || !errors.Is(err, context.Canceled) {
		t.Fatalf("CallTool with an aborted prompt = %v; want ErrRejected wrapping context.Canceled", err)
	}
	if r := record(t, f.store, "write", "order-8"); r.State.Final() {
		t.Fatalf("record after an aborted prompt = %s; want a state that is not final", r.State)
	}
	if _, err := f.c.CallTool(client.WithConfirmer(ctx, approveOnce), write("a", 1)); err != nil {
		t.Fatalf("CallTool after the abort, with an answer = %v; want it to run", err)
	}
}

// A person's no is DENIED and stays so.
func TestDenialIsFinal(t *testing.T) {
	deny := answers{ans: confirm.Answer{Decision: ledger.DecisionDenied, By: "ops", Reason: "not today"}}
	f := newFixture(t, nil, &client.Options{Policy: ask(), Confirmer: deny})
	ctx := client.WithKey(context.Background(), "order-9")
	if _, err := f.c.CallTool(ctx, write("a", 1)); !errors.Is(err, client.ErrDenied) {
		t.Fatalf("CallTool denied = %v; want ErrDenied", err)
	}
	if _, err := f.c.CallTool(client.WithConfirmer(ctx, approveOnce), write("a", 1)); !errors.Is(err, client.ErrDenied) {
		t.Fatalf("CallTool after a denial = %v; want the denial replayed", err)
	}
	if n := f.srv.TotalExecutions(); n != 0 {
		t.Fatalf("executions = %d; want 0", n)
	}
}

// Arguments the server refuses before the tool runs (-32602) do not burn
// the key: the corrected call with the same key runs.
func TestRefusedArgumentsKeepTheKey(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Script(mcptest.ProtocolError(jsonrpc.CodeInvalidParams))
	ctx := client.WithKey(context.Background(), "order-10")
	_, err := f.c.CallTool(ctx, write("a", 1))
	if !errors.Is(err, client.ErrRejected) {
		t.Fatalf("CallTool refused with -32602 = %v; want ErrRejected", err)
	}
	if r := record(t, f.store, "write", "order-10"); r.State != ledger.StateRejected {
		t.Fatalf("record after -32602 = %s; want REJECTED", r.State)
	}
	res, err := f.c.CallTool(ctx, write("a", 2))
	if err != nil || res.IsError {
		t.Fatalf("corrected CallTool with the same key = %v, %v; want it to run", res, err)
	}
	if n := f.srv.Executions("order-10"); n != 1 {
		t.Fatalf("executions of order-10 = %d; want 1", n)
	}
}

func deadOwner(t *testing.T) string { return ledgertest.DeadOwner(t, "agentctl") }

// An agent killed mid-call leaves PROCESSING under a long lease; the re-run
// on the same host learns at once that the owner is gone: UNKNOWN, never a
// second execution, and no wait for the lease.
func TestDeadOwnerMidCallIsUnknownAtOnce(t *testing.T) {
	f := newFixture(t, nil, &client.Options{InProgressWait: time.Hour})
	ctx := context.Background()
	fp, _ := args.Fingerprint([]byte(`{"amount":1,"id":"a"}`))
	cl, err := f.store.Claim(ctx, ledger.ClaimRequest{
		ID: ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: "order-11"}, Fingerprint: fp,
		Owner: deadOwner(t), Lease: time.Hour,
	})
	if err != nil || !cl.Won {
		t.Fatalf("Claim = %v, %v", cl, err)
	}
	_, err = f.c.CallTool(client.WithKey(ctx, "order-11"), write("a", 1))
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("CallTool of a dead owner's key = %v; want ErrOutcomeUnknown", err)
	}
	if r := record(t, f.store, "write", "order-11"); r.State != ledger.StateUnknown || r.ErrorKind != ledger.KindOwnerDead {
		t.Fatalf("record = %s %q; want UNKNOWN %q", r.State, r.ErrorKind, ledger.KindOwnerDead)
	}
	if n := f.srv.TotalExecutions(); n != 0 {
		t.Fatalf("executions = %d; want 0", n)
	}
}

// A prompt killed with its process leaves PENDING_APPROVAL; the next call
// finds the owner gone, the record becomes REJECTED, and the call runs.
func TestDeadPromptIsRejectedAndRunsAgain(t *testing.T) {
	f := newFixture(t, nil, &client.Options{Policy: ask(), Confirmer: approveOnce, InProgressWait: time.Hour})
	ctx := context.Background()
	fp, _ := args.Fingerprint([]byte(`{"amount":1,"id":"a"}`))
	cl, err := f.store.Claim(ctx, ledger.ClaimRequest{
		ID: ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: "order-12"}, Fingerprint: fp,
		Owner: deadOwner(t), Lease: time.Hour, NeedsApproval: true,
	})
	if err != nil || !cl.Won {
		t.Fatalf("Claim = %v, %v", cl, err)
	}
	res, err := f.c.CallTool(client.WithKey(ctx, "order-12"), write("a", 1))
	if err != nil || res.IsError {
		t.Fatalf("CallTool after a dead prompt = %v, %v; want it to run", res, err)
	}
	if n := f.srv.Executions("order-12"); n != 1 {
		t.Fatalf("executions of order-12 = %d; want 1", n)
	}
}

// The fence of the lease goes out with the key.
func TestFenceOnTheWire(t *testing.T) {
	f := newFixture(t, nil, nil)
	var (
		mu  sync.Mutex // guards got
		got []any
	)
	f.srv.MCP().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, r.Params.Meta[client.MetaKey], r.Params.Meta["io.github.mcpledger/fence"], r.Params.Meta["io.github.mcpledger/fence-scope"])
			}
			return next(ctx, method, req)
		}
	})
	if _, err := f.c.CallTool(client.WithKey(context.Background(), "order-13"), write("a", 1)); err != nil {
		t.Fatalf("CallTool = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	rec := record(t, f.store, "write", "order-13")
	if len(got) != 3 || got[0] != "order-13" || got[1] != float64(1) || got[2] != ledger.FenceScope(rec) {
		t.Fatalf("_meta key, fence and scope at the server = %v; want [order-13 1 %s]", got, ledger.FenceScope(rec))
	}
}

// Against a key-aware server that does not keep keys per tenant, two
// tenants' equal keys go out distinct, and neither names its tenant: one
// tenant is never answered with the other's record.
func TestTenantsDistinctOnTheWire(t *testing.T) {
	f := newFixture(t, &mcptest.Options{Idempotent: true}, &client.Options{Tenant: "acme"})
	other := client.New(f.srv.ConnectInMemory(context.Background(), t, nil), f.store,
		&client.Options{Tenant: "globex", Policy: allow(), Retry: fastRetry()})
	t.Cleanup(func() { other.Close() })
	ctx := client.WithKey(context.Background(), "order-7")
	if _, err := f.c.CallTool(ctx, write("a", 1)); err != nil {
		t.Fatalf("acme CallTool = %v", err)
	}
	o, err := other.Call(ctx, write("a", 1))
	if err != nil || o.Replayed {
		t.Fatalf("globex Call = %+v, %v; want its own execution", o, err)
	}
	seen := f.srv.KeysSeen()
	if len(seen) != 2 || seen[0] == seen[1] {
		t.Fatalf("keys the server saw = %v; want two distinct keys", seen)
	}
	for _, k := range seen {
		if strings.Contains(k, "acme") || strings.Contains(k, "globex") {
			t.Errorf("key on the wire %q names its tenant", k)
		}
	}
	if n := f.srv.TotalExecutions(); n != 2 {
		t.Fatalf("executions = %d; want 2 (one per tenant)", n)
	}
}

// Arguments that already carry an idempotency_key (a host put it there,
// in front of a proxy) get the key as it goes on the wire, even when the
// tool's schema does not declare the argument: the guard, which checks
// that _meta and the argument agree, runs the call.
func TestKeyArgumentFollowsTheWireKey(t *testing.T) {
	var runs atomic.Int32
	var seen atomic.Value
	s := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "v1"}, nil)
	s.AddTool(&mcp.Tool{Name: "write", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			seen.Store(string(req.Params.Arguments))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	s.AddReceivingMiddleware(server.New(openStore(t), nil).Middleware())
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(cs, openStore(t), &client.Options{Tenant: "acme", Policy: allow(), Retry: fastRetry()})
	t.Cleanup(func() { c.Close() })
	ctx := client.WithKey(context.Background(), "order-8")
	o, err := c.Call(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"id": "a", "idempotency_key": "order-8"}})
	if err != nil || o.Result.IsError {
		t.Fatalf("Call with the key in the arguments = %+v, %v; want it run", o, err)
	}
	if runs.Load() != 1 {
		t.Fatalf("runs = %d; want 1", runs.Load())
	}
	want := wire.TenantKey("acme", "order-8")
	if got, _ := seen.Load().(string); !strings.Contains(got, want) {
		t.Fatalf("arguments at the server = %s; want the wire key %s", got, want)
	}
}
