package client_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/redact"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/planner/ledgertools"
)

// TestToolListChangedRefreshesSchema: the key argument is filled from the
// tool's current schema, which the client re-reads after the server says
// its tool list changed.
func TestToolListChangedRefreshesSchema(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "v1"}, nil)
	gotKeyArg := make(chan bool, 4)
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		_, ok := args["idempotency_key"]
		gotKeyArg <- ok
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	plain := &mcp.Tool{Name: "send", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"to": map[string]any{"type": "string"}}}}
	srv.AddTool(plain, handler)

	changed := make(chan struct{}, 4)
	var c *client.Client
	mc := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			c.ToolListChanged(ctx, req)
			changed <- struct{}{}
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mc.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	c = client.New(cs, openStore(t), &client.Options{Policy: allow()})
	defer c.Close()

	call := func(key string) bool {
		t.Helper()
		p := &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"to": "x"}}
		if _, err := c.CallTool(client.WithKey(ctx, key), p); err != nil {
			t.Fatalf("CallTool(%s) = %v", key, err)
		}
		return <-gotKeyArg
	}
	if call("k1") {
		t.Fatal("idempotency_key sent before the schema declared it")
	}
	keyed := &mcp.Tool{Name: "send", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"to": map[string]any{"type": "string"}, "idempotency_key": map[string]any{"type": "string"},
	}}}
	srv.AddTool(keyed, handler) // replaces the tool and notifies clients
	<-changed
	if !call("k2") {
		t.Fatal("idempotency_key not sent after the schema declared it")
	}
}

// TestLedgerServerUsesExclusions: ledger_status asked by arguments finds a
// call whose excluded fields differ, as the re-planning guard would,
// because the client's ledger server fingerprints with the client's
// exclusions.
func TestLedgerServerUsesExclusions(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, &client.Options{Session: "s1", Tools: ledger.Tools{"write": {Exclude: []string{"amount"}}}})
	o, err := f.c.Call(ctx, write("7", 1))
	if err != nil {
		t.Fatalf("Call = %v", err)
	}
	ask := func(s *mcp.Server) (found bool, key string) {
		t.Helper()
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := s.Connect(ctx, serverT, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "model", Version: "v1"}, nil).Connect(ctx, clientT, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: planner.StatusTool, Arguments: map[string]any{
			"tool": "write", "arguments": map[string]any{"id": "7", "amount": 2},
		}})
		if err != nil || res.IsError {
			t.Fatalf("ledger_status = %+v, %v", res, err)
		}
		var out planner.StatusOutput
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		if out.Call != nil {
			key = out.Call.Key
		}
		return out.Found, key
	}
	if found, key := ask(f.c.LedgerServer()); !found || key != o.Key {
		t.Errorf("LedgerServer: found %v key %q; want the call, key %q", found, key, o.Key)
	}
	// Without the exclusions the other amount is another operation.
	if found, _ := ask(ledgertools.NewServer(f.store, "default", "s1", nil)); found {
		t.Error("ledgertools.NewServer without the exclusions found the call; the test no longer shows what LedgerServer adds")
	}
}

// TestRepeatableReconnects: a request safe to repeat, sent on a session
// that has died, is sent once more on a new session, which the client then
// keeps; without a connect function the error is returned as it came.
func TestRepeatableReconnects(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, nil)
	first := f.c.Session()
	for ss := range f.srv.MCP().Sessions() {
		ss.Close()
	}
	sends := 0
	list := func(ctx context.Context, s *mcp.ClientSession) error {
		sends++
		_, err := s.ListTools(ctx, nil)
		return err
	}
	if err := f.c.Repeatable(ctx, list); err != nil {
		t.Fatalf("Repeatable after the session died = %v", err)
	}
	if sends != 2 || f.c.Session() == first {
		t.Errorf("sent %d times, new session %v; want 2 sends and a new session", sends, f.c.Session() != first)
	}

	srv := mcptest.New(nil)
	t.Cleanup(func() { srv.Close() })
	c := client.New(srv.ConnectInMemory(ctx, t, nil), openStore(t), &client.Options{Policy: allow()})
	t.Cleanup(func() { c.Close() })
	for ss := range srv.MCP().Sessions() {
		ss.Close()
	}
	sends = 0
	if err := c.Repeatable(ctx, list); err == nil || sends != 1 {
		t.Errorf("Repeatable without a connect function = %v after %d sends; want the session's error after 1", err, sends)
	}
}

// A tool's own redaction rules (ledger.ToolSettings.Redact) apply to what
// the ledger stores; the fingerprint still sees the real arguments.
func TestPerToolRedaction(t *testing.T) {
	f := newFixture(t, nil, &client.Options{Tools: ledger.Tools{"write": {Redact: &redact.Redactor{Names: []string{"id"}}}}})
	ctx := client.WithKey(context.Background(), "red-1")
	if _, err := f.c.CallTool(ctx, write("customer-4711", 1)); err != nil {
		t.Fatalf("CallTool = %v", err)
	}
	r := record(t, f.store, "write", "red-1")
	if strings.Contains(string(r.Arguments), "customer-4711") || !strings.Contains(string(r.Arguments), redact.Placeholder) {
		t.Fatalf("stored arguments = %s; want the id redacted", r.Arguments)
	}
	fp, err := args.Fingerprint([]byte(`{"amount":1,"id":"customer-4711"}`))
	if err != nil || r.Fingerprint != fp {
		t.Fatalf("fingerprint = %s, %v; want the one of the real arguments %s", r.Fingerprint, err, fp)
	}
}
