package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
)

// A form or a link naming a record that is not in the token's tenant (it
// is another tenant's, or no one's) is answered 404 with a plain message,
// never 502 with the store's error, and the other tenant's record is left
// as it was.
func TestRecordEndpointsNotFound(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	// acme's UNKNOWN record; the console serves tenant default.
	id := ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: "pay-acme"}
	cl, err := r.st.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "s", Fingerprint: "f", Arguments: json.RawMessage(`{"payee":"acme"}`), Owner: "w"})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	if _, err := r.st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "w", Fence: cl.Record.Fence, ErrorKind: "ambiguous", ErrorMessage: "lost", AddAttempts: 1}); err != nil {
		t.Fatalf("Transition = %v", err)
	}
	do := func(method, path string, form url.Values) (int, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, r.web.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Console-Token", r.con.Token())
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	// A queued call of tenant default gives the approvals page its forms.
	if _, err := r.agent.Call(client.WithKey(ctx, "pay-1"), call("create_payment", map[string]any{"payee": "acme"})); !errors.Is(err, client.ErrAwaitingApproval) {
		t.Fatalf("queue pay-1 = %v; want ErrAwaitingApproval", err)
	}
	_, approvals := do("GET", "/approvals", nil)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(approvals)
	if m == nil {
		t.Fatal("the approvals page has no CSRF token")
	}
	for _, key := range []string{"pay-acme", "nope"} {
		form := func(extra ...string) url.Values {
			v := url.Values{"csrf": {m[1]}, "tenant": {"default"}, "layer": {ledger.LayerClient}, "tool": {"create_payment"}, "key": {key}, "reason": {"checked"}}
			for i := 0; i+1 < len(extra); i += 2 {
				v.Set(extra[i], extra[i+1])
			}
			return v
		}
		for _, tc := range []struct {
			method, path string
			form         url.Values
		}{
			{"POST", "/approve", form()},
			{"POST", "/deny", form()},
			{"POST", "/reconcile", form("as", "succeeded")},
			{"GET", "/record?" + url.Values{"layer": {ledger.LayerClient}, "tool": {"create_payment"}, "key": {key}}.Encode(), nil},
		} {
			code, body := do(tc.method, tc.path, tc.form)
			msg := errorText(body)
			if code != http.StatusNotFound {
				t.Errorf("%s %s key %s = %d %q; want 404", tc.method, tc.path, key, code, msg)
				continue
			}
			if !strings.Contains(msg, "no record "+key) || !strings.Contains(msg, "tenant default") || strings.Contains(msg, "sqlite") || strings.Contains(msg, "client:") || strings.Contains(msg, "ledger:") {
				t.Errorf("%s %s key %s says %q; want a plain no record %s of tenant default, without the store's error", tc.method, tc.path, key, msg, key)
			}
		}
	}
	if rec, err := r.st.Get(ctx, id); err != nil || rec.State != ledger.StateUnknown || rec.Approval != nil {
		t.Fatalf("acme's record after the forms = %v, %v; want it UNKNOWN, untouched", rec, err)
	}
}

// errorText is the message of the console's error page.
func errorText(page string) string {
	m := regexp.MustCompile(`(?s)<p class="error"[^>]*>(.*?)</p>`).FindStringSubmatch(page)
	if m == nil {
		return page
	}
	return strings.TrimSpace(m[1])
}
