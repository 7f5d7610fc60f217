package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
)

// noRedirect is a client that shows a form's 303 rather than following
// it; its timeout ends a stream that should have been refused.
var noRedirect = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// fetch GETs path with the access token and returns the status and the
// page.
func (r *rig) fetch(t *testing.T, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", r.web.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Console-Token", r.con.Token())
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("GET %s = %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// page GETs path and fails unless it is a 200.
func (r *rig) page(t *testing.T, path string) string {
	t.Helper()
	code, body := r.fetch(t, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", path, code, body)
	}
	return body
}

// post sends form to path as the page's form would (the CSRF token is
// added) and returns the status and the body.
func (r *rig) post(t *testing.T, path string, form url.Values) (int, string) {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(r.page(t, "/approvals"))
	if m == nil {
		m = regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(r.page(t, "/unknown"))
	}
	if m == nil {
		t.Fatal("no page has a CSRF token")
	}
	form.Set("csrf", m[1])
	req, err := http.NewRequest("POST", r.web.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Console-Token", r.con.Token())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", r.web.URL)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("POST %s = %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// row is the table row of data-id id on page ("" when there is none).
func row(page, id string) string {
	m := regexp.MustCompile(`(?s)<tr data-id="` + regexp.QuoteMeta(id) + `">(.*?)</tr>`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return m[1]
}

var rowIDRE = regexp.MustCompile(`<tr data-id="([^"]+)">`)

func rowIDs(page string) []string {
	var ids []string
	for _, m := range rowIDRE.FindAllStringSubmatch(page, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// formFields are the fields of the form of class cls in a row, as the
// browser would send them (the hidden ones).
func formFields(t *testing.T, rowHTML, cls string) url.Values {
	t.Helper()
	m := regexp.MustCompile(`(?s)<form method="post" action="[^"]+" class="` + cls + `">(.*?)</form>`).FindStringSubmatch(rowHTML)
	if m == nil {
		t.Fatalf("the row has no %s form:\n%s", cls, rowHTML)
	}
	v := url.Values{}
	for _, in := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(m[1], -1) {
		v.Set(in[1], html.UnescapeString(in[2]))
	}
	return v
}

// Two records of one key, in layers client and server, are two rows with
// their layers; the layer filter keeps one; each record's page shows its
// own state; a reconciliation settles the layer's record only.
func TestLayersOfOneKey(t *testing.T) {
	r := newRig(t)
	r.succeededIn(t, ledger.LayerClient, "refund-7", "refund r-1 issued")
	r.unknownIn(t, ledger.LayerServer, "refund-7")
	clientRow, serverRow := "default/client/refund/refund-7", "default/server/refund/refund-7"

	all := r.page(t, "/")
	if ids := rowIDs(all); len(ids) != 2 {
		t.Fatalf("records page rows = %v; want the client's and the server's record of refund-7", ids)
	}
	for _, tc := range []struct{ id, layer, state string }{{clientRow, "client", "SUCCEEDED"}, {serverRow, "server", "UNKNOWN"}} {
		tr := row(all, tc.id)
		if tr == "" {
			t.Fatalf("records page has no row %s:\n%s", tc.id, all)
		}
		for _, w := range []string{`<td class="layer">` + tc.layer + `</td>`, ">" + tc.state + "<", `href="/record?key=refund-7&amp;layer=` + tc.layer + `&amp;tenant=default&amp;tool=refund"`} {
			if !strings.Contains(tr, w) {
				t.Errorf("row %s lacks %q:\n%s", tc.id, w, tr)
			}
		}
	}
	if !strings.Contains(all, `<th>Layer</th>`) || !strings.Contains(all, `<select name="layer" id="f-layer">`) {
		t.Errorf("records page lacks the Layer column or filter")
	}

	server := r.page(t, "/?tenant=default&layer=server")
	if ids := rowIDs(server); len(ids) != 1 || ids[0] != serverRow {
		t.Errorf("layer=server rows = %v; want only %s", ids, serverRow)
	}
	for _, w := range []string{`<option value="server" selected>`, `data-src="/events?layer=server&amp;tenant=default"`, `<a href="/?tenant=default">clear</a>`} {
		if !strings.Contains(server, w) {
			t.Errorf("layer=server page lacks %q", w)
		}
	}
	if ids := rowIDs(r.page(t, "/?layer=client&state=unknown")); len(ids) != 0 {
		t.Errorf("layer=client&state=unknown rows = %v; want none", ids)
	}
	if ids := rowIDs(r.page(t, "/?layer=proxy")); len(ids) != 0 {
		t.Errorf("layer=proxy rows = %v; want none", ids)
	}
	// A layer the select does not offer is still shown as chosen.
	if p := r.page(t, "/?layer=edge"); !strings.Contains(p, `<option value="edge" selected>`) || len(rowIDs(p)) != 0 {
		t.Errorf("layer=edge: the select does not show it, or rows match")
	}

	for _, tc := range []struct{ layer, state, want string }{
		{"client", "SUCCEEDED", "refund r-1 issued"},
		{"server", "UNKNOWN", "the connection dropped"},
	} {
		p := r.page(t, "/record?tenant=default&layer="+tc.layer+"&tool=refund&key=refund-7")
		for _, w := range []string{`id="state">` + tc.state + "<", `<td id="layer">` + tc.layer + `</td>`, tc.want} {
			if !strings.Contains(p, w) {
				t.Errorf("record page of layer %s lacks %q", tc.layer, w)
			}
		}
		if tc.layer == "server" && !strings.Contains(p, `<input type="hidden" name="layer" value="server">`) {
			t.Errorf("the server record's reconcile form does not post its layer")
		}
	}
	// Without its layer the link names the record of no layer, which is
	// not there: the page says which layers hold the key.
	if code, p := r.fetch(t, "/record?tenant=default&tool=refund&key=refund-7"); code != http.StatusNotFound || !strings.Contains(p, "layer client and layer server") {
		t.Errorf("record without a layer = %d; want 404 naming the layers that hold the key:\n%s", code, p)
	}

	// Reconcile the server's record with the form the unknown page shows.
	unk := r.page(t, "/unknown")
	if !strings.Contains(unk, "<th>Layer</th>") || !strings.Contains(row(unk, serverRow), `<td class="layer">server</td>`) {
		t.Fatalf("unknown page lacks the Layer column or the server's row:\n%s", unk)
	}
	form := formFields(t, row(unk, serverRow), "settle")
	if form.Get("layer") != "server" {
		t.Fatalf("reconcile form fields = %v; want layer server", form)
	}
	form.Set("as", "failed")
	form.Set("note", "no refund at the bank")
	if code, body := r.post(t, "/reconcile", form); code != http.StatusSeeOther {
		t.Fatalf("POST /reconcile = %d: %s", code, body)
	}
	if rec := r.get(t, ledger.LayerServer, "refund", "refund-7"); rec.State != ledger.StateFailed {
		t.Errorf("server's refund-7 = %s; want FAILED", rec.State)
	}
	if rec := r.get(t, ledger.LayerClient, "refund", "refund-7"); rec.State != ledger.StateSucceeded || rec.ErrorMessage != "" {
		t.Errorf("client's refund-7 = %s %q; want SUCCEEDED as it was", rec.State, rec.ErrorMessage)
	}
}

// Approving the proxy's queued record of a key approves that record only:
// the client's record of the same key still waits.
func TestApproveInLayer(t *testing.T) {
	r := newRig(t)
	bg := context.Background()
	proxy := r.clientIn(t, ledger.LayerProxy)
	pay := call("create_payment", map[string]any{"payee": "acme", "amount_cents": 700})
	for _, c := range []*client.Client{r.agent, proxy} {
		if _, err := c.Call(client.WithKey(bg, "pay-7"), pay); !errors.Is(err, client.ErrAwaitingApproval) {
			t.Fatalf("queue pay-7 = %v; want ErrAwaitingApproval", err)
		}
	}
	clientRow, proxyRow := "default/client/create_payment/pay-7", "default/proxy/create_payment/pay-7"
	ap := r.page(t, "/approvals")
	if ids := rowIDs(ap); len(ids) != 2 || row(ap, clientRow) == "" || row(ap, proxyRow) == "" {
		t.Fatalf("approvals rows = %v; want %s and %s", ids, clientRow, proxyRow)
	}
	if !strings.Contains(ap, "<th>Layer</th>") || !strings.Contains(row(ap, proxyRow), `<td class="layer">proxy</td>`) {
		t.Errorf("approvals page lacks the Layer column")
	}
	form := formFields(t, row(ap, proxyRow), "approve")
	if form.Get("layer") != ledger.LayerProxy || form.Get("key") != "pay-7" {
		t.Fatalf("approve form of the proxy's row = %v; want layer proxy, key pay-7", form)
	}
	form.Set("reason", "checked")
	if code, body := r.post(t, "/approve", form); code != http.StatusSeeOther {
		t.Fatalf("POST /approve = %d: %s", code, body)
	}
	if rec := r.get(t, ledger.LayerProxy, "create_payment", "pay-7"); rec.State != ledger.StatePendingApproval || rec.Approval == nil || rec.Approval.By != "ana" || rec.Approval.Decision != ledger.DecisionApproved {
		t.Fatalf("proxy's pay-7 = %s approval %+v; want PENDING_APPROVAL approved by ana", rec.State, rec.Approval)
	}
	if rec := r.get(t, ledger.LayerClient, "create_payment", "pay-7"); rec.State != ledger.StatePendingApproval || rec.Approval != nil {
		t.Fatalf("client's pay-7 = %s approval %+v; want PENDING_APPROVAL, undecided", rec.State, rec.Approval)
	} else if q, ok := client.QueuedCall(rec); !ok || q.Approved {
		t.Fatalf("client's pay-7 queue = %+v %v; want waiting", q, ok)
	}
	ap = r.page(t, "/approvals")
	if !strings.Contains(row(ap, proxyRow), "approved by ana") || !strings.Contains(row(ap, clientRow), "waits for a decision") {
		t.Errorf("approvals after approving the proxy's record:\n%s", ap)
	}
	if _, err := proxy.Call(client.WithKey(bg, "pay-7"), pay); err != nil {
		t.Fatalf("the proxy's approved call = %v", err)
	}
	if _, err := r.agent.Call(client.WithKey(bg, "pay-7"), pay); !errors.Is(err, client.ErrAwaitingApproval) {
		t.Fatalf("the client's call = %v; want it still awaiting approval", err)
	}
	if n := r.runs.Load(); n != 1 {
		t.Fatalf("create_payment ran %d times; want once, for the proxy", n)
	}

	// A denial of the client's record leaves the proxy's alone.
	form = formFields(t, row(r.page(t, "/approvals"), clientRow), "deny")
	form.Set("reason", "duplicate")
	if code, body := r.post(t, "/deny", form); code != http.StatusSeeOther {
		t.Fatalf("POST /deny = %d: %s", code, body)
	}
	if rec := r.get(t, ledger.LayerClient, "create_payment", "pay-7"); rec.State != ledger.StateDenied {
		t.Errorf("client's pay-7 = %s; want DENIED", rec.State)
	}
	if rec := r.get(t, ledger.LayerProxy, "create_payment", "pay-7"); rec.State != ledger.StateSucceeded {
		t.Errorf("proxy's pay-7 = %s; want SUCCEEDED", rec.State)
	}
}

// A layer that breaks the rules, in a query or a form, is a 400 that says
// what is wrong and what to send.
func TestInvalidLayer(t *testing.T) {
	r := newRig(t)
	r.unknownIn(t, ledger.LayerServer, "refund-7")
	long := strings.Repeat("x", ledger.MaxLayerLen+1)
	for _, path := range []string{
		"/?layer=" + url.QueryEscape("no such"),
		"/?layer=" + long,
		"/record?tenant=default&layer=a%2Fb&tool=refund&key=refund-7",
		"/events?layer=" + url.QueryEscape("<x>"),
	} {
		code, body := r.fetch(t, path)
		body = html.UnescapeString(body)
		if code != http.StatusBadRequest || !strings.Contains(body, "invalid layer") || !strings.Contains(body, "want client, proxy, server") {
			t.Errorf("GET %s = %d; want 400 saying the layer is invalid and which to use:\n%s", path, code, body)
		}
	}
	for _, path := range []string{"/approve", "/deny", "/reconcile"} {
		form := url.Values{"tenant": {"default"}, "layer": {"server side"}, "tool": {"refund"}, "key": {"refund-7"}, "reason": {"x"}, "as": {"succeeded"}}
		code, body := r.post(t, path, form)
		body = html.UnescapeString(body)
		if code != http.StatusBadRequest || !strings.Contains(body, `layer "server side"`) || !strings.Contains(body, "use the") {
			t.Errorf("POST %s with an invalid layer = %d; want 400 with what to do:\n%s", path, code, body)
		}
	}
	if rec := r.get(t, ledger.LayerServer, "refund", "refund-7"); rec.State != ledger.StateUnknown {
		t.Errorf("refund-7 = %s after the refused forms; want UNKNOWN", rec.State)
	}
}

// The live updates carry the layer and honour the layer filter.
func TestEventsLayer(t *testing.T) {
	r := newRig(t)
	r.succeededIn(t, ledger.LayerClient, "refund-7", "refund r-1 issued")
	r.unknownIn(t, ledger.LayerServer, "refund-7")
	events := func(q string) map[string]map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", r.web.URL+"/events?"+q+"&after=2000-01-01T00:00:00Z", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Console-Token", r.con.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /events?%s = %d", q, resp.StatusCode)
		}
		b, _ := io.ReadAll(resp.Body) // ends when ctx does
		got := map[string]map[string]any{}
		for _, line := range strings.Split(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var ev map[string]any
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					t.Fatalf("event %s: %v", data, err)
				}
				id, _ := ev["id"].(string)
				if id == "" {
					t.Fatalf("event %s has no id", data)
				}
				got[id] = ev
			}
		}
		return got
	}
	got := events("tenant=default")
	if len(got) != 2 || got["default/client/refund/refund-7"] == nil || got["default/server/refund/refund-7"] == nil {
		t.Fatalf("events = %v; want one per layer", got)
	}
	if ev := got["default/server/refund/refund-7"]; ev["layer"] != "server" || ev["state"] != "UNKNOWN" || ev["link"] != "/record?key=refund-7&layer=server&tenant=default&tool=refund" {
		t.Errorf("server's event = %v", ev)
	}
	got = events("tenant=default&layer=client")
	if len(got) != 1 || got["default/client/refund/refund-7"]["state"] != "SUCCEEDED" {
		t.Errorf("events with layer=client = %v; want only the client's record", got)
	}
}

// A person who found that an UNKNOWN call never took effect says so in
// the console: the record becomes RETRYABLE, reconciled by that person,
// and its page shows the finding.
func TestReconcileNotRun(t *testing.T) {
	r := newRig(t)
	r.unknown(t, "refund-nr")
	if page := r.page(t, "/unknown"); !strings.Contains(page, `value="not_run"`) {
		t.Fatalf("the unknown page offers no not_run answer:\n%s", page)
	}
	form := url.Values{"tenant": {"default"}, "tool": {"refund"}, "key": {"refund-nr"}, "as": {"not_run"}, "note": {"no refund at the bank"}}
	if code, body := r.post(t, "/reconcile", form); code != http.StatusSeeOther {
		t.Fatalf("POST /reconcile as not_run = %d: %s", code, body)
	}
	rec := r.get(t, "", "refund", "refund-nr")
	if rec.State != ledger.StateRetryable || rec.Reconciled == nil || rec.Reconciled.Method != ledger.MethodPerson || rec.Reconciled.By != "ana" {
		t.Fatalf("refund-nr = %s, resolution %+v; want RETRYABLE, reconciled by ana", rec.State, rec.Reconciled)
	}
	if page := r.page(t, "/record?tool=refund&key=refund-nr"); !strings.Contains(page, "reconcile: not_run by person (ana)") || !strings.Contains(page, "no refund at the bank") {
		t.Errorf("the record page does not show the finding:\n%s", page)
	}
}
