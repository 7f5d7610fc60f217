package mcpgo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/redact"
	"github.com/mcpledger/mcpledger/mcpgo"
)

// A tool's own redaction rules (ledger.ToolSettings.Redact) apply to what
// both mcp-go ledgers store, as they do in package client and the go-sdk
// guard; the fingerprint still sees the real arguments.
func TestPerToolRedaction(t *testing.T) {
	tools := ledger.Tools{"create_order": {Redact: &redact.Redactor{Names: []string{"customer"}}}}
	serverLedger, agentLedger := openStore(t, "server.db"), openStore(t, "agent.db")
	g := mcpgo.NewGuard(serverLedger, &mcpgo.ServerOptions{Tools: tools})
	s := server.NewMCPServer("shop", "v1", g.ServerOptions()...)
	s.AddTool(mcp.NewTool("create_order", mcp.WithString("customer"), mcp.WithDestructiveHintAnnotation(false)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ordered"), nil
		})
	c, err := mcpgo.New(inProcess(t, s), agentLedger, &mcpgo.ClientOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := mcp.CallToolRequest{}
	req.Params.Name = "create_order"
	req.Params.Arguments = map[string]any{"customer": "customer-4711"}
	if _, err := c.Call(caller.WithKey(t.Context(), "red-1"), req); err != nil {
		t.Fatalf("Call = %v", err)
	}
	fp, err := args.Fingerprint([]byte(`{"customer":"customer-4711"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []struct {
		layer string
		st    ledger.Store
	}{{ledger.LayerClient, agentLedger}, {ledger.LayerServer, serverLedger}} {
		recs, err := side.st.List(t.Context(), ledger.Filter{Tenant: "default", Layer: side.layer, Tool: "create_order"})
		if err != nil || len(recs.Records) != 1 {
			t.Fatalf("%s ledger: %d records, %v; want the call's one", side.layer, len(recs.Records), err)
		}
		r := recs.Records[0]
		if strings.Contains(string(r.Arguments), "customer-4711") || !strings.Contains(string(r.Arguments), redact.Placeholder) {
			t.Errorf("%s ledger stored arguments %s; want the customer redacted", side.layer, r.Arguments)
		}
		if side.layer == ledger.LayerClient && r.Fingerprint != fp {
			t.Errorf("client fingerprint = %s; want the one of the real arguments %s", r.Fingerprint, fp)
		}
	}
}
