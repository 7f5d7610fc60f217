package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/cmd/agentctl/internal/console"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/redact"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// rig is a real ledger (SQLite in a temp folder), a real MCP server and
// client over in-memory transports, and the console served over real HTTP
// on 127.0.0.1.
type rig struct {
	st     ledger.Store
	mcp    *mcp.Server
	runs   atomic.Int64 // executions of create_payment at the server
	agent  *client.Client
	con    *console.Console
	web    *httptest.Server
	policy *confirm.Policy
}

func newRig(t *testing.T) *rig {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return newRigOn(t, st)
}

func newRigOn(t *testing.T, st ledger.Store) *rig {
	t.Helper()
	var err error
	r := &rig{st: st, mcp: mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)}
	r.mcp.AddTool(&mcp.Tool{Name: "create_payment", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := r.runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("payment p-%d created", n)}}}, nil
		})
	r.mcp.AddTool(&mcp.Tool{Name: "send_invoice", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "invoice sent"}}}, nil
		})
	r.policy = &confirm.Policy{Rules: []confirm.Rule{{Tool: "create_payment", Action: confirm.Queue}, {Tool: "*", Action: confirm.Allow}}}
	r.agent = r.client(t)
	r.con, err = console.New(console.Options{Store: st, Tenant: "default", Who: "ana", Policy: r.policy, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("console.New = %v", err)
	}
	r.web = httptest.NewServer(r.con)
	t.Cleanup(r.web.Close)
	return r
}

func (r *rig) client(t *testing.T) *client.Client {
	t.Helper()
	return r.clientIn(t, "")
}

// clientIn is an agent's client whose records are in layer (the client's
// default, ledger.LayerClient, when empty).
func (r *rig) clientIn(t *testing.T, layer string) *client.Client {
	t.Helper()
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := r.mcp.Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { ss.Close() })
		return mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	}
	c, err := client.Dial(context.Background(), connect, r.st, &client.Options{Policy: r.policy, Session: "agent-7", Requester: "agent", Layer: layer})
	if err != nil {
		t.Fatalf("client.Dial = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(tool string, args map[string]any) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: tool, Arguments: args}
}

// unknown leaves an UNKNOWN record of key, in no layer, as a lost
// connection would.
func (r *rig) unknown(t *testing.T, key string) {
	t.Helper()
	r.unknownIn(t, "", key)
}

// unknownIn leaves an UNKNOWN refund record of key in layer.
func (r *rig) unknownIn(t *testing.T, layer, key string) {
	t.Helper()
	ctx := context.Background()
	id := ledger.ID{Tenant: "default", Layer: layer, Tool: "refund", Key: key}
	cl, err := r.st.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "agent-7", Fingerprint: "f-" + key, Arguments: json.RawMessage(`{"order":"o-9","amount":40}`), Owner: "gone-worker"})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	if _, err := r.st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "gone-worker", Fence: cl.Record.Fence,
		ErrorKind: "ambiguous", ErrorMessage: "the connection dropped after the request was sent", AddAttempts: 1}); err != nil {
		t.Fatalf("Transition = %v", err)
	}
}

// succeededIn leaves a SUCCEEDED refund record of key in layer, whose
// result says text.
func (r *rig) succeededIn(t *testing.T, layer, key, text string) {
	t.Helper()
	ctx := context.Background()
	id := ledger.ID{Tenant: "default", Layer: layer, Tool: "refund", Key: key}
	cl, err := r.st.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "agent-7", Fingerprint: "f-" + key, Arguments: json.RawMessage(`{"order":"o-9","amount":40}`), Owner: "worker"})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	res, err := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "worker", Fence: cl.Record.Fence,
		Result: res, AddAttempts: 1}); err != nil {
		t.Fatalf("Transition = %v", err)
	}
}

func (r *rig) get(t *testing.T, layer, tool, key string) *ledger.Record {
	t.Helper()
	rec, err := r.st.Get(context.Background(), ledger.ID{Tenant: "default", Layer: layer, Tool: tool, Key: key})
	if err != nil {
		t.Fatalf("Get(%s %s %s) = %v", layer, tool, key, err)
	}
	return rec
}

func TestAccessToken(t *testing.T) {
	r := newRig(t)
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(req *http.Request) (int, string) {
		t.Helper()
		resp, err := plain.Do(req)
		if err != nil {
			t.Fatalf("%s %s = %v", req.Method, req.URL, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	mustReq := func(method, path string, body io.Reader) *http.Request {
		req, err := http.NewRequest(method, r.web.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	for _, path := range []string{"/", "/approvals", "/record?tool=create_payment&key=k", "/events", "/static/console.js", "/?token=wrong"} {
		if code, body := status(mustReq("GET", path, nil)); code != http.StatusUnauthorized || !strings.Contains(body, "agentctl ui printed") {
			t.Errorf("GET %s without the token = %d %q; want 401 saying where the token is", path, code, body)
		}
	}
	form := url.Values{"tenant": {"default"}, "tool": {"create_payment"}, "key": {"k"}, "reason": {"x"}}
	if code, _ := status(mustReq("POST", "/deny", strings.NewReader(form.Encode()))); code != http.StatusUnauthorized {
		t.Errorf("POST /deny without the token = %d; want 401", code)
	}
	// The printed URL sets the cookie and drops the token from the address.
	code, _ := status(mustReq("GET", "/?token="+url.QueryEscape(r.con.Token()), nil))
	if code != http.StatusSeeOther {
		t.Fatalf("GET the printed URL = %d; want 303 to the page without the token", code)
	}
	withToken := func(req *http.Request) *http.Request {
		req.Header.Set("X-Console-Token", r.con.Token())
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return req
	}
	if code, _ := status(withToken(mustReq("GET", "/", nil))); code != http.StatusOK {
		t.Errorf("GET / with the token = %d; want 200", code)
	}
	if code, body := status(withToken(mustReq("POST", "/deny", strings.NewReader(form.Encode())))); code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Errorf("POST /deny without the CSRF token = %d %q; want 403", code, body)
	}
	cross := withToken(mustReq("POST", "/deny", strings.NewReader(form.Encode())))
	cross.Header.Set("Origin", "http://evil.example")
	if code, body := status(cross); code != http.StatusForbidden || !strings.Contains(body, "another origin") {
		t.Errorf("cross-origin POST = %d %q; want 403", code, body)
	}
	rebound := withToken(mustReq("GET", "/", nil))
	rebound.Host = "evil.example:80"
	if code, _ := status(rebound); code != http.StatusForbidden {
		t.Errorf("GET with Host evil.example = %d; want 403", code)
	}
}

func TestNew(t *testing.T) {
	if _, err := console.New(console.Options{Tenant: "default"}); err == nil {
		t.Error("New without a store = nil; want an error")
	}
	r := newRig(t)
	if _, err := console.New(console.Options{Store: r.st, Tenant: "no tenant"}); !errors.Is(err, ledger.ErrInvalidTenant) {
		t.Errorf("New with tenant %q = %v; want ErrInvalidTenant", "no tenant", err)
	}
}

func TestPagesRender(t *testing.T) {
	r := newRig(t)
	bg := context.Background()
	if _, err := r.agent.Call(client.WithKey(bg, "invoice-1"), call("send_invoice", map[string]any{"customer": "acme", "amount": 10})); err != nil {
		t.Fatal(err)
	}
	if _, err := r.agent.Call(client.WithKey(bg, "pay-1"), call("create_payment", map[string]any{"payee": "acme", "amount_cents": 100, "api_key": "sk-live-1"})); !errors.Is(err, client.ErrAwaitingApproval) {
		t.Fatalf("queue = %v", err)
	}
	r.unknown(t, "refund-1")
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/", []string{"invoice-1", "pay-1", "refund-1", "PENDING_APPROVAL", `href="/record?key=pay-1&amp;layer=client&amp;tenant=default&amp;tool=create_payment"`,
			`data-id="default/client/create_payment/pay-1"`, `data-id="default//refund/refund-1"`, `<td class="layer">client</td>`, `<td class="layer">-</td>`}},
		{"/?state=unknown", []string{"refund-1"}},
		{"/record?tenant=default&layer=client&tool=create_payment&key=pay-1", []string{"Timeline", "claimed", "PENDING_APPROVAL", "Approve", redact.Placeholder, `<td id="layer">client</td>`, `name="layer" value="client"`}},
		{"/record?tenant=default&tool=refund&key=refund-1", []string{"Reconcile", "the connection dropped", `<td id="layer">-</td>`, `name="layer" value=""`}},
		{"/approvals", []string{"pay-1", "requested by agent", "<th>Layer</th>", `<td class="layer">client</td>`, `name="layer" value="client"`}},
		{"/unknown", []string{"refund-1", "SUCCEEDED", "<th>Layer</th>", `<td class="layer">-</td>`}},
		{"/stats", []string{"<svg", "duplicate hit rate"}},
	} {
		req, err := http.NewRequest("GET", r.web.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Console-Token", r.con.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d: %s", tc.path, resp.StatusCode, b)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("GET %s: the page lacks %q", tc.path, w)
			}
		}
		if strings.Contains(string(b), "sk-live-1") {
			t.Errorf("GET %s shows a secret argument", tc.path)
		}
	}
	for _, path := range []string{"/?state=bogus", "/?since=soon", "/record?tool=create_payment&key=nope", "/record?tool=&key=x"} {
		req, err := http.NewRequest("GET", r.web.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Console-Token", r.con.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("GET %s = %d; want a 4xx with a message", path, resp.StatusCode)
		}
	}
}

// The console on a PostgreSQL ledger, through a browser's requests: the
// token in the URL becomes a cookie, forms carry the CSRF token and the
// Origin, an approval makes the queued call run once, a reconciliation
// settles the UNKNOWN record.
func TestConsoleOnPostgres(t *testing.T) {
	st, err := postgres.Open(context.Background(), pgtest.Schema(t), nil)
	if err != nil {
		t.Fatalf("postgres.Open = %v", err)
	}
	t.Cleanup(func() { st.Close() })
	r := newRigOn(t, st)
	bg := context.Background()
	pay := call("create_payment", map[string]any{"payee": "acme", "amount_cents": 100})
	if _, err := r.agent.Call(client.WithKey(bg, "pay-pg"), pay); !errors.Is(err, client.ErrAwaitingApproval) {
		t.Fatalf("queue = %v", err)
	}
	r.unknown(t, "refund-pg")
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar}
	page := func(path string) string {
		t.Helper()
		resp, err := browser.Get(r.web.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d, %v: %s", path, resp.StatusCode, err, b)
		}
		return string(b)
	}
	home := page("/?token=" + url.QueryEscape(r.con.Token()))
	if !strings.Contains(home, "pay-pg") || !strings.Contains(home, "refund-pg") {
		t.Fatalf("records page on PostgreSQL lacks the records:\n%s", home)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page("/approvals"))
	if m == nil {
		t.Fatal("the approvals page has no CSRF token")
	}
	post := func(path string, form url.Values) {
		t.Helper()
		form.Set("csrf", m[1])
		req, err := http.NewRequest("POST", r.web.URL+path, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", r.web.URL)
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || strings.Contains(string(b), `class="error"`) {
			t.Fatalf("POST %s = %d, %v: %s", path, resp.StatusCode, err, b)
		}
	}
	post("/approve", url.Values{"tenant": {"default"}, "layer": {ledger.LayerClient}, "tool": {"create_payment"}, "key": {"pay-pg"}, "reason": {"ok"}})
	if _, err := r.agent.Call(client.WithKey(bg, "pay-pg"), pay); err != nil {
		t.Fatalf("the approved call = %v", err)
	}
	if n := r.runs.Load(); n != 1 {
		t.Fatalf("create_payment ran %d times; want 1", n)
	}
	post("/reconcile", url.Values{"tenant": {"default"}, "tool": {"refund"}, "key": {"refund-pg"}, "as": {"succeeded"}, "note": {"seen at the bank"}})
	if rec := r.get(t, "", "refund", "refund-pg"); rec.State != ledger.StateSucceeded {
		t.Fatalf("refund-pg = %s; want SUCCEEDED", rec.State)
	}
	if tl := page("/record?tool=refund&key=refund-pg"); !strings.Contains(tl, "seen at the bank") {
		t.Errorf("the record page does not show the reconciliation note")
	}
}

func TestPaging(t *testing.T) {
	r := newRig(t)
	bg := context.Background()
	for i := range 53 {
		if _, err := r.agent.Call(client.WithKey(bg, fmt.Sprintf("inv-%02d", i)), call("send_invoice", map[string]any{"n": i})); err != nil {
			t.Fatal(err)
		}
	}
	get := func(path string) string {
		t.Helper()
		req, err := http.NewRequest("GET", r.web.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Console-Token", r.con.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d, %v", path, resp.StatusCode, err)
		}
		return string(b)
	}
	first := get("/?tool=send_invoice")
	rowRE := regexp.MustCompile(`<tr data-id="default/client/send_invoice/(inv-\d+)">`)
	seen := map[string]bool{}
	for _, m := range rowRE.FindAllStringSubmatch(first, -1) {
		seen[m[1]] = true
	}
	next := regexp.MustCompile(`id="next" href="/\?([^"]+)"`).FindStringSubmatch(first)
	if len(seen) != 50 || next == nil {
		t.Fatalf("first page shows %d records, next link %v; want 50 and a link", len(seen), next)
	}
	second := get("/?" + strings.ReplaceAll(next[1], "&amp;", "&"))
	for _, m := range rowRE.FindAllStringSubmatch(second, -1) {
		if seen[m[1]] {
			t.Errorf("%s is on both pages", m[1])
		}
		seen[m[1]] = true
	}
	if len(seen) != 53 || strings.Contains(second, `id="next"`) {
		t.Errorf("two pages show %d records; want all 53 and no third page", len(seen))
	}
}
