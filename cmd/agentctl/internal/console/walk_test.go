package console_test

import (
	"context"
	"encoding/json"
	"html/template"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
)

// TestStateWalk: a record in each of the eight states shows on its page
// with its state and what the state means in the ledger's one text
// (ledger.Meaning), and the records page filtered by the state lists it.
func TestStateWalk(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	for _, s := range ledger.States {
		key := "walk-" + strings.ToLower(string(s))
		id := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "create_payment", Key: key}
		owner := "elsewhere"
		if s == ledger.StatePendingApproval {
			owner = ledger.QueueOwner(false, "", "agent")
		}
		cl, err := r.st.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "agent-7", Fingerprint: "f-" + key,
			Arguments: json.RawMessage(`{"amount":5}`), Owner: owner, Lease: time.Hour,
			NeedsApproval: s == ledger.StatePendingApproval || s == ledger.StateDenied})
		if err != nil || !cl.Won {
			t.Fatalf("Claim(%s) = %+v, %v", key, cl, err)
		}
		tr := ledger.Transition{ID: id, From: cl.Record.State, To: s, Owner: owner, Fence: cl.Record.Fence, AddAttempts: 1}
		switch s {
		case ledger.StateSucceeded, ledger.StateFailed:
			res, err := json.Marshal(&mcp.CallToolResult{IsError: s == ledger.StateFailed, Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}})
			if err != nil {
				t.Fatal(err)
			}
			tr.Result = res
		case ledger.StateDenied:
			tr.AddAttempts = 0
			tr.Approval = &ledger.Approval{Decision: ledger.DecisionDenied, By: "ann", At: time.Now().UTC(), Reason: "not today"}
		default:
			tr.ErrorKind, tr.ErrorMessage = "seeded", "as another process left it"
		}
		if s != ledger.StateProcessing && s != ledger.StatePendingApproval {
			if _, err := r.st.Transition(ctx, tr); err != nil {
				t.Fatalf("Transition(%s -> %s) = %v", key, s, err)
			}
		}
		rec := r.get(t, ledger.LayerClient, "create_payment", key)

		q := url.Values{"layer": {ledger.LayerClient}, "tool": {"create_payment"}, "key": {key}}
		page := r.page(t, "/record?"+q.Encode())
		if !strings.Contains(page, `id="state">`+string(s)+`<`) {
			t.Errorf("the page of a %s record does not show its state", s)
		}
		if m := template.HTMLEscapeString(ledger.Meaning(rec)); !strings.Contains(page, m) {
			t.Errorf("the page of a %s record does not say what it means (%q)", s, m)
		}
		list := r.page(t, "/?"+url.Values{"state": {string(s)}}.Encode())
		if !strings.Contains(list, key) {
			t.Errorf("the records page filtered by %s does not list %s", s, key)
		}
		for _, other := range ledger.States {
			if other == s {
				continue
			}
			if strings.Contains(r.page(t, "/?"+url.Values{"state": {string(other)}}.Encode()), key+"<") {
				t.Errorf("the records page filtered by %s lists %s, a %s record", other, key, s)
			}
		}
	}
}
