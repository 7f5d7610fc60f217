package console_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/redact"
)

// A tool that echoes a secret keeps it in its stored result (a replay
// returns the result byte for byte), and a call may carry one in a field
// whose name says nothing. The console shows the record as ledger show
// does: the secret nowhere on the page, [REDACTED] in its place.
func TestRecordPageRedactsSecretsInBrowser(t *testing.T) {
	const secret = "sk_live_51H8xQ2Lk9Zp3Rt7Vb"
	r := newRig(t)
	ctx := browser(t)
	bg := context.Background()

	paid := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "create_payment", Key: "pay-secret"}
	cl, err := r.st.Claim(bg, ledger.ClaimRequest{ID: paid, Session: "agent-7", Fingerprint: "f-secret",
		Arguments: json.RawMessage(`{"payee":"acme","note":"charge with ` + secret + `"}`), Owner: "worker"})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	res, err := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "payment p-1 created with key " + secret}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.st.Transition(bg, ledger.Transition{ID: paid, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "worker", Fence: cl.Record.Fence, Result: res, AddAttempts: 1}); err != nil {
		t.Fatalf("Transition = %v", err)
	}
	// A structured result (no text item) and an error message that quote
	// the secret too.
	lost := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "create_payment", Key: "pay-lost"}
	cl, err = r.st.Claim(bg, ledger.ClaimRequest{ID: lost, Session: "agent-7", Fingerprint: "f-lost", Arguments: json.RawMessage(`{"payee":"acme"}`), Owner: "worker"})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	if _, err := r.st.Transition(bg, ledger.Transition{ID: lost, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "worker", Fence: cl.Record.Fence,
		ErrorKind: "ambiguous", ErrorMessage: "upstream said: bad key " + secret, AddAttempts: 1}); err != nil {
		t.Fatalf("Transition = %v", err)
	}
	if rec := r.get(t, paid.Layer, paid.Tool, paid.Key); !strings.Contains(string(rec.Result), secret) {
		t.Fatalf("the stored result = %s; the test needs the secret in it", rec.Result)
	}

	run(t, ctx, "open the printed URL", chromedp.Navigate(r.web.URL+"/?token="+r.con.Token()), chromedp.WaitVisible(css(`#records`)))
	for _, page := range []struct{ path, wait string }{
		{"/record?layer=client&tool=create_payment&key=pay-secret", "#timeline"},
		{"/record?layer=client&tool=create_payment&key=pay-lost", "#timeline"},
		{"/unknown", "main"},
		{"/", "#records"},
	} {
		run(t, ctx, "open "+page.path, chromedp.Navigate(r.web.URL+page.path), chromedp.WaitVisible(css(page.wait)))
		html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		if err != nil {
			t.Fatalf("read %s: %v", page.path, err)
		}
		if strings.Contains(html, "51H8xQ2Lk9Zp3Rt7Vb") {
			t.Errorf("%s shows the secret in clear:\n%s", page.path, text(t, ctx, "main"))
		}
		if page.path != "/" && !strings.Contains(html, redact.Placeholder) {
			t.Errorf("%s does not show %s where the secret was:\n%s", page.path, redact.Placeholder, text(t, ctx, "main"))
		}
	}
}
