package client_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
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
