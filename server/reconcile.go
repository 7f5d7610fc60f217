package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Reconcile settles an UNKNOWN operation once someone has found out what
// happened (checked the payments table, asked the downstream by its
// end-to-end key). as is ledger.StateSucceeded or ledger.StateFailed; res is
// what every later duplicate gets back, and when nil a text result built
// from note is stored (isError when as is FAILED). The note is kept on the
// record as its error message.
func Reconcile(ctx context.Context, store ledger.Store, id ledger.ID, as ledger.State, res *mcp.CallToolResult, note string) (*ledger.Record, error) {
	if as != ledger.StateSucceeded && as != ledger.StateFailed {
		return nil, fmt.Errorf("server: reconcile as %s: %w", as, ledger.ErrIllegalTransition)
	}
	if res == nil {
		text := note
		if text == "" {
			text = "reconciled as " + string(as)
		}
		res = &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: text}},
			IsError: as == ledger.StateFailed,
		}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("server: reconcile: encoding result: %w", err)
	}
	rec, err := ledger.Reconcile(ctx, store, id, ledger.Reconciliation{As: as, Result: raw, Message: note})
	if err != nil {
		return nil, fmt.Errorf("server: reconcile %s: %w", id.Tool, err)
	}
	return rec, nil
}
