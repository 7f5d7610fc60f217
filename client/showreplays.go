package client

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// ShowReplays is a go-sdk sending middleware for runtimes that give the
// model a tool result's content and drop its _meta (anthropic-sdk-go's MCP
// helper does): to a replayed result, one that carries the replay marker,
// it appends a text block that says so in the ledger's words (when the
// call first ran, its key, not to issue it again, ledger_status). Other
// results, and the ledger's record, are untouched. It must run outside
// the Middleware, so it goes first:
//
//	mc.AddSendingMiddleware(client.ShowReplays, mw.Wrap)
//
// It reads the marker of any upstream that sets it (agentctl proxy too).
func ShowReplays(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || method != methodCallTool {
			return res, err
		}
		r, ok := res.(*mcp.CallToolResult)
		if !ok || r == nil {
			return res, nil
		}
		m, ok := replayOf(r.Meta)
		if !ok {
			return res, nil
		}
		var tool string
		if p, ok := req.GetParams().(*mcp.CallToolParams); ok && p != nil {
			tool = p.Name
		}
		note := ledger.Explain(&ledger.Record{ID: ledger.ID{Tool: tool, Key: m.Key}, State: m.State, CreatedAt: m.FirstAt, Attempts: m.Attempts})
		cp := *r
		cp.Content = append(slices.Clip(r.Content), &mcp.TextContent{Text: note})
		return &cp, nil
	}
}

// replayOf reads the replay marker of a result's _meta: the value this
// package set, or one decoded from JSON.
func replayOf(meta mcp.Meta) (wire.Replay, bool) {
	v, ok := meta[wire.MetaReplay]
	if !ok {
		return wire.Replay{}, false
	}
	if m, ok := v.(wire.Replay); ok {
		return m, m.Key != ""
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return wire.Replay{}, false
	}
	var m wire.Replay
	if err := json.Unmarshal(raw, &m); err != nil || m.Key == "" || !m.State.Valid() {
		return wire.Replay{}, false
	}
	return m, true
}
