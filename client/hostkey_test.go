package client_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/wire"
)

// newRuntime is one agent runtime's go-sdk client with its own ledger
// middleware (its own ledger session), on srv.
func newRuntime(t *testing.T, srv *mcptest.Server, store ledger.Store) *mcp.ClientSession {
	t.Helper()
	mw := client.NewMiddleware(store, &client.Options{Retry: fastRetry(), Policy: allow()})
	t.Cleanup(func() { mw.Close() })
	mc := mcp.NewClient(&mcp.Implementation{Name: "runtime", Version: "v1"}, nil)
	mc.AddSendingMiddleware(mw.Wrap)
	s, err := mc.Connect(context.Background(), srv.ClientTransport(t), nil)
	if err != nil {
		t.Fatalf("Connect = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A runtime that fills the idempotency_key argument itself (the write
// tool declares it) gets that key as the operation's: two runtimes, each
// a ledger session of its own, calling with one key make one execution,
// and the second gets the first's replay.
func TestMiddlewareTakesTheRuntimesArgumentKey(t *testing.T) {
	srv := mcptest.New(nil)
	t.Cleanup(func() { srv.Close() })
	store := openStore(t)
	var first string
	for i := range 2 {
		s := newRuntime(t, srv, store)
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "write",
			Arguments: map[string]any{"id": "a", "amount": 1, "idempotency_key": "rt-key-1"}})
		if err != nil || res.IsError {
			t.Fatalf("runtime %d: CallTool = %+v, %v; want a result", i, res, err)
		}
		if _, replay := res.Meta[wire.MetaReplay]; replay != (i == 1) {
			t.Errorf("runtime %d: replay marker %v; want %v", i, res.Meta[wire.MetaReplay], i == 1)
		}
		if i == 0 {
			first = goText(res)
		} else if goText(res) != first {
			t.Errorf("runtime %d answered %q; want the first's %q", i, goText(res), first)
		}
	}
	if n := srv.TotalExecutions(); n != 1 {
		t.Errorf("executions = %d; want 1", n)
	}
	if keys := srv.KeysSeen(); len(keys) != 1 || keys[0] != "rt-key-1" {
		t.Errorf("keys the server saw = %v; want [rt-key-1]", keys)
	}
	if rec := record(t, store, "write", "rt-key-1"); rec.State != ledger.StateSucceeded {
		t.Errorf("record of rt-key-1 = %s; want SUCCEEDED", rec.State)
	}
}

// A _meta key and another key in the argument, and arguments that give a
// name twice, are malformed params: -32602 at the wrapper (in its error's
// chain) and at the middleware (what session.CallTool returns), nothing
// recorded, nothing sent.
func TestClientRefusesMalformedParams(t *testing.T) {
	cases := []struct {
		name    string
		params  func() *mcp.CallToolParams
		mention []string
	}{
		{"two keys", func() *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "write", Meta: mcp.Meta{wire.MetaKey: "meta-key-1"},
				Arguments: map[string]any{"id": "a", "amount": 1, "idempotency_key": "arg-key-1"}}
		}, []string{"meta-key-1", "arg-key-1"}},
		{"a name twice", func() *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "write", Arguments: json.RawMessage(`{"id":"a","amount":1,"amount":5000}`)}
		}, []string{`"amount"`}},
		{"a name twice, keyed", func() *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "write", Meta: mcp.Meta{wire.MetaKey: "k-1"}, Arguments: json.RawMessage(`{"id":"a","amount":1,"amount":5000}`)}
		}, []string{`"amount"`}},
		{"the key twice", func() *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "write", Meta: mcp.Meta{wire.MetaKey: "k-1"}, Arguments: json.RawMessage(`{"id":"a","amount":1,"idempotency_key":"k-1","idempotency_key":"k-2"}`)}
		}, []string{`"idempotency_key"`}},
	}
	check := func(t *testing.T, door string, err error, mention []string) {
		t.Helper()
		je, ok := errs.AsType[*jsonrpc.Error](err)
		if !ok || je.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("%s: error %v; want -32602 invalid params", door, err)
		}
		for _, w := range mention {
			if !strings.Contains(je.Message, w) {
				t.Errorf("%s: message %q does not name %s", door, je.Message, w)
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newFixture(t, nil, nil)
			_, err := w.c.CallTool(context.Background(), tc.params())
			check(t, "wrapper", err, tc.mention)
			m := newMiddlewareFixture(t, nil, nil)
			_, err = m.session.CallTool(context.Background(), tc.params())
			check(t, "middleware", err, tc.mention)
			if n := m.sent.n.Load(); n != 0 {
				t.Errorf("tools/call sent = %d; want 0", n)
			}
			for _, st := range []ledger.Store{w.store, m.store} {
				page, err := st.List(context.Background(), ledger.Filter{Tenant: "default", Layer: ledger.LayerClient})
				if err != nil || len(page.Records) > 0 {
					t.Errorf("records = %v, %v; want none", page, err)
				}
			}
			if n := w.srv.TotalExecutions() + m.srv.TotalExecutions(); n != 0 {
				t.Errorf("executions = %d; want 0", n)
			}
		})
	}
}
