package mcpgo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcpgo/internal/orders"
)

// The mcp-go guard refuses arguments that give a member name twice as
// invalid params (-32602, naming the member) before anything is stored or
// run, even when the member is the key itself.
func TestGuardRefusesDuplicateNames(t *testing.T) {
	for _, tc := range []struct{ name, args, member string }{
		{"a name twice", `{"item":"a","qty":1,"qty":5000}`, `"qty"`},
		{"the key twice", `{"item":"a","qty":1,"idempotency_key":"k-1","idempotency_key":"k-2"}`, `"idempotency_key"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t, "server.db")
			c := &orders.Counter{}
			s, g := orders.MCPGo(store, c)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			defer inW.Close()
			go func() { _ = g.ServeStdio(ctx, s, inR, outW) }()
			lines := bufio.NewScanner(outR)
			msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + orders.Tool +
				`","_meta":{"io.github.mcpledger/idempotency-key":"k-1"},"arguments":` + tc.args + `}}`
			if _, err := io.WriteString(inW, msg+"\n"); err != nil {
				t.Fatal(err)
			}
			if !lines.Scan() {
				t.Fatalf("no answer: %v", lines.Err())
			}
			out := lines.Bytes()
			var answer struct {
				Error *struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out, &answer); err != nil || answer.Error == nil || answer.Error.Code != mcp.INVALID_PARAMS {
				t.Fatalf("tools/call with %s = %s; want error %d", tc.args, out, mcp.INVALID_PARAMS)
			}
			if !strings.Contains(answer.Error.Message, tc.member) {
				t.Errorf("message %q does not name %s", answer.Error.Message, tc.member)
			}
			if n := c.Runs(); n != 0 {
				t.Errorf("handler ran %d times; want 0", n)
			}
			page, err := store.List(ctx, ledger.Filter{Tenant: "default"})
			if err != nil || len(page.Records) > 0 {
				t.Errorf("records = %v, %v; want none", page, err)
			}
		})
	}
}

// The mcp-go client refuses malformed params as mcp-go reports a server's
// -32602 (errors.Is(err, mcp.ErrInvalidParams)), before anything is
// stored or sent: a member name given twice, the key's among them.
func TestClientRefusesMalformedParams(t *testing.T) {
	u := newUpstream(t, "gosdk", "http", true)
	store := openStore(t, "client.db")
	a := newMCPGoAgent(t, u, store, "")
	for _, tc := range []struct {
		name, key, args string
		mention         []string
	}{
		{"a name twice", "", `{"item":"a","qty":1,"qty":5000}`, []string{`"qty"`}},
		{"a name twice, keyed", "k-1", `{"item":"a","qty":1,"qty":5000}`, []string{`"qty"`}},
		{"the key twice", "k-1", `{"item":"a","qty":1,"idempotency_key":"k-1","idempotency_key":"k-2"}`, []string{`"idempotency_key"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			if tc.key != "" {
				ctx = keyed(ctx, tc.key)
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = orders.Tool
			req.Params.Arguments = json.RawMessage(tc.args)
			_, err := a.c.CallTool(ctx, req)
			if !errors.Is(err, mcp.ErrInvalidParams) {
				t.Fatalf("CallTool(%s) = %v; want mcp.ErrInvalidParams", tc.args, err)
			}
			for _, w := range tc.mention {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
			page, err := store.List(ctx, ledger.Filter{Tenant: "default"})
			if err != nil || len(page.Records) > 0 {
				t.Errorf("records = %v, %v; want none", page.Records, err)
			}
			if n := u.runs(); n != 0 {
				t.Errorf("create_order ran %d times; want 0", n)
			}
		})
	}
}
