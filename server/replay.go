package server

import (
	"encoding/json"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// replay rebuilds the stored result with the replay marker. Each call
// decodes a fresh copy, so the marker never leaks into the stored bytes or
// into another duplicate's reply.
func replay(rec *ledger.Record) (*mcp.CallToolResult, error) {
	res := new(mcp.CallToolResult)
	if text, ok := wire.Missing(rec); ok {
		// A record settled without a result (DENIED, or reconciled
		// without one): say why instead of replaying an empty success.
		res.IsError = true
		res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
	} else if len(rec.Result) > 0 {
		if err := json.Unmarshal(rec.Result, res); err != nil {
			return nil, fmt.Errorf("server: stored result of %q does not decode: %w", rec.Tool, err)
		}
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	meta := make(mcp.Meta, len(res.Meta)+1)
	for k, v := range res.Meta {
		meta[k] = v
	}
	meta[wire.MetaReplay] = wire.Marker(rec)
	res.Meta = meta
	return res, nil
}
