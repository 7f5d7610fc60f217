package client

import (
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// upstreamState is the state an upstream ledger (agentctl proxy) named on
// an error result instead of the tool's answer (_meta MetaError), if any.
func upstreamState(res *mcp.CallToolResult) (ledger.State, bool) {
	if res == nil || !res.IsError {
		return "", false
	}
	m, ok := res.Meta[wire.MetaError].(map[string]any)
	if !ok {
		return "", false
	}
	s, ok := m["state"].(string)
	if !ok || s == "" {
		return "", false
	}
	return ledger.State(s), true
}

// upstreamSaid is the error of a call whose upstream ledger answered with
// its record's state: the text it gave, which says what happened there.
func upstreamSaid(res *mcp.CallToolResult) error {
	st, _ := upstreamState(res)
	text := ledger.OneLine(resultText(res), 500)
	if text == "" {
		text = "the upstream ledger answered " + string(st)
	}
	return errors.New("upstream: " + text)
}

// resultText is the text content of res, joined.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}
