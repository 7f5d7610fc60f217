package server

import (
	"encoding/json"
	"fmt"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// replay rebuilds the stored result with the replay marker. Each call
// decodes a fresh copy, so the marker never leaks into the stored bytes or
// into another duplicate's reply.
func replay(rec *ledger.Record) (*mcp.CallToolResult, error) {
	res := new(mcp.CallToolResult)
	if len(rec.Result) > 0 {
		if err := json.Unmarshal(rec.Result, res); err != nil {
			return nil, fmt.Errorf("server: stored result of %q does not decode: %w", rec.Tool, err)
		}
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	if len(rec.Result) == 0 && rec.State != ledger.StateSucceeded {
		// A record settled without a result (DENIED, or reconciled without
		// one): say why instead of replaying an empty success.
		msg := rec.ErrorMessage
		if msg == "" {
			msg = "the operation ended as " + string(rec.State)
		}
		res.IsError = true
		res.Content = []mcp.Content{&mcp.TextContent{Text: msg}}
	}
	meta := make(mcp.Meta, len(res.Meta)+1)
	for k, v := range res.Meta {
		meta[k] = v
	}
	meta[wire.MetaReplay] = caller.Marker(rec)
	res.Meta = meta
	return res, nil
}

// encode marshals a result for storage, compacting it past MaxResult with
// the tool's Compactor (ledger.Compact by default), the same rule the
// client ledger uses.
func (g *Guard) encode(c *call, r *mcp.CallToolResult) (json.RawMessage, bool, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, false, fmt.Errorf("server: encoding result of %q: %w", c.id.Tool, err)
	}
	small, changed, err := caller.Stored(raw, g.opts.MaxResult, c.policy.Compact)
	if err != nil {
		return nil, false, fmt.Errorf("server: compacting result of %q: %w", c.id.Tool, err)
	}
	return small, changed, nil
}
