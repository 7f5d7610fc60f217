package payments_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/internal/payments"
)

// find_payment answers as a probe expects, guarded or not: the payment a
// key made, an isError result for a key that made none, and never a
// record of its own in the guard's ledger.
func TestFindPayment(t *testing.T) {
	for _, unguarded := range []bool{false, true} {
		name := "guarded"
		if unguarded {
			name = "unguarded"
		}
		t.Run(name, func(t *testing.T) {
			app := open(t, payments.Config{Unguarded: unguarded})
			cs := connect(t, app)
			ctx := context.Background()
			res, err := pay(ctx, cs, "order-7", 700, "carol")
			if err != nil || res.IsError {
				t.Fatalf("create_payment = %v, %v; want a payment", res, err)
			}
			p := paymentOf(t, res)
			find := func(key string) *mcp.CallToolResult {
				t.Helper()
				got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: payments.ToolFind, Arguments: map[string]any{"idempotency_key": key}})
				if err != nil {
					t.Fatalf("find_payment(%q) = %v; want a result", key, err)
				}
				return got
			}
			if got := find("order-7"); got.IsError || paymentOf(t, got) != p {
				t.Errorf("find_payment(order-7) = %+v; want %+v", got, p)
			}
			// Asked twice about a key that paid nothing, it says so twice:
			// the guard keeps no answer of a read-only tool.
			for range 2 {
				if got := find("order-8"); !got.IsError {
					t.Errorf("find_payment(order-8) = %+v; want an isError result", got)
				}
			}
			if got := find("bad key"); !got.IsError {
				t.Errorf("find_payment(bad key) = %+v; want an isError result", got)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range tools.Tools {
				if tl.Name == payments.ToolFind && (tl.Annotations == nil || !tl.Annotations.ReadOnlyHint) {
					t.Errorf("find_payment annotations = %+v; want readOnlyHint", tl.Annotations)
				}
			}
		})
	}
}
