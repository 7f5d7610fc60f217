package mcptest_test

import (
	"context"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	os.Exit(m.Run())
}

// write calls the write tool with key in _meta (none when key is "").
func write(ctx context.Context, cs *mcp.ClientSession, key, id string, amount float64) (*mcp.CallToolResult, error) {
	p := &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"id": id, "amount": amount}}
	if key != "" {
		p.Meta = mcp.Meta{mcptest.MetaKey: key}
	}
	return cs.CallTool(ctx, p)
}

func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
