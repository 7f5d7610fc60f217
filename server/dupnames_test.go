package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
)

// Arguments that give a member name twice mean one thing to one parser and
// another to the next: the guard refuses them as invalid params (-32602,
// naming the member) before anything is stored or run, even when the
// member is the key itself.
func TestGuardRefusesDuplicateNames(t *testing.T) {
	for _, tc := range []struct{ name, args, member string }{
		{"a name twice", `{"item":"a","qty":1,"qty":5000}`, `"qty"`},
		{"the key twice", `{"item":"a","qty":1,"idempotency_key":"k-1","idempotency_key":"k-2"}`, `"idempotency_key"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil, nil)
			cs := r.connect()
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_order",
				Meta: mcp.Meta{wire.MetaKey: "k-1"}, Arguments: json.RawMessage(tc.args)})
			if code, _, _ := wireErr(err); code != jsonrpc.CodeInvalidParams {
				t.Fatalf("CallTool(%s) = %v (code %d); want %d", tc.args, err, code, jsonrpc.CodeInvalidParams)
			}
			if !strings.Contains(err.Error(), tc.member) {
				t.Errorf("error %q does not name %s", err, tc.member)
			}
			if got := r.runs.Load(); got != 0 {
				t.Errorf("handler ran %d times; want 0", got)
			}
			if recs := tenantRecords(t, r.store, server.DefaultTenant); len(recs) != 0 {
				t.Errorf("%d records stored; want none", len(recs))
			}
		})
	}
}
