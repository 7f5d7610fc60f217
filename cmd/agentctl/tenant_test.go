package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/wire"
)

// paymentsOf counts tenant's payments for key at the payments example.
func (e *e2e) paymentsOf(tenant, key string) int {
	e.t.Helper()
	out, err := exec.Command(e.payments, "-db", e.payDB, "-count", key, "-tenant", tenant).Output()
	if err != nil {
		e.t.Fatalf("payments -count %s -tenant %s: %v", key, tenant, err)
	}
	var c struct {
		Payments int `json:"payments"`
	}
	if err := json.Unmarshal(out, &c); err != nil {
		e.t.Fatalf("payments -count: %v (%s)", err, out)
	}
	return c.Payments
}

// Three tenants call one key-aware payments server with bearer tokens,
// with the same key. The server takes each call's tenant from its token:
// tenant c, with tenant a's arguments, gets a payment of its own, not a's;
// tenant b, with other arguments, is not told that a's key exists. The
// token is sent from the environment and shows in no output.
func TestTenantsEndToEnd(t *testing.T) {
	e := newE2E(t)
	tokens := filepath.Join(e.dir, "tokens")
	if err := os.WriteFile(tokens, []byte("# token tenant\ntok-aaaa-1 a\ntok-bbbb-2 b\ntok-cccc-3 c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := e.startPaymentsHTTP("-tokens", tokens)
	call := func(tenant, token string, args ...string) outcome {
		t.Helper()
		env := []string{"PAY_TOKEN=" + token}
		return e.runEnv(nil, env, append([]string{"--json", "--tenant", tenant, "call", "--url", url,
			"--header", "Authorization: Bearer $PAY_TOKEN", "--yes", "--key", "order-7"}, args...)...)
	}
	paymentID := func(o outcome) string {
		t.Helper()
		var c callJSON
		if err := json.Unmarshal([]byte(o.stdout), &c); err != nil || c.Result == nil {
			t.Fatalf("call --json = %q: %v", o.stdout, err)
		}
		b, err := json.Marshal(c.Result.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			PaymentID string `json:"payment_id"`
		}
		if err := json.Unmarshal(b, &p); err != nil || p.PaymentID == "" {
			t.Fatalf("no payment id in %s: %v", b, err)
		}
		return p.PaymentID
	}

	a := call("a", "tok-aaaa-1", pay...)
	if a.code != exitOK {
		t.Fatalf("tenant a: exit %d\nstdout %s\nstderr %s", a.code, a.stdout, a.stderr)
	}
	c := call("c", "tok-cccc-3", pay...)
	c.wantExit(t, exitOK)
	if pa, pc := paymentID(a), paymentID(c); pa == pc {
		t.Fatalf("tenant c got tenant a's payment %s", pa)
	}
	b := call("b", "tok-bbbb-2", "create_payment", "amount_cents=99", "currency=EUR", "payee=other")
	b.wantExit(t, exitOK)
	for _, o := range []outcome{a, b, c} {
		if strings.Contains(o.stdout+o.stderr, "tok-") {
			t.Errorf("a token shows in the output: %q %q", o.stdout, o.stderr)
		}
	}
	// Tenant c's repeat is its own replay.
	again := call("c", "tok-cccc-3", pay...)
	again.wantExit(t, exitOK)
	if paymentID(again) != paymentID(c) {
		t.Errorf("tenant c's repeat = %s; want its own payment %s", paymentID(again), paymentID(c))
	}
	for _, tenant := range []string{"a", "b", "c"} {
		if n := e.paymentsOf(tenant, "order-7"); n != 1 {
			t.Errorf("payments of tenant %s for order-7 = %d; want 1", tenant, n)
		}
	}
	// Without a token the server serves nothing.
	e.run(nil, "call", "--url", url, "--yes", "--key", "order-8", pay[0], pay[1], pay[2], pay[3]).wantExit(t, exitUnreachable)
}

// The same through agentctl proxy: two tenants' proxies in front of one
// payments server with tokens; the hosts send the same key in _meta. Each
// tenant gets its own payment, and a repeat is its own tenant's replay.
func TestTenantsThroughTheProxy(t *testing.T) {
	e := newE2E(t)
	tokens := filepath.Join(e.dir, "tokens")
	if err := os.WriteFile(tokens, []byte("tok-aaaa-1 a\ntok-cccc-3 c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := e.startPaymentsHTTP("-tokens", tokens)
	pays := map[string]string{}
	for _, tc := range []struct{ tenant, token string }{{"a", "tok-aaaa-1"}, {"c", "tok-cccc-3"}} {
		env := proxyEnv(t, "PAY_TOKEN="+tc.token, "MCPLEDGER_TENANT="+tc.tenant)
		cs, _ := connectStdioHost(t, env, elicitAnswer("approve_once"), "--url", url, "--header", "Authorization: Bearer $PAY_TOKEN")
		for range 2 {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_payment", Arguments: payArgs,
				Meta: mcp.Meta{"io.github.mcpledger/idempotency-key": "order-7"}})
			if err != nil || res.IsError {
				t.Fatalf("tenant %s: create_payment = %v, %v", tc.tenant, res, err)
			}
			text := proxyResultText(res)
			if prev, ok := pays[tc.tenant]; ok && prev != text {
				t.Fatalf("tenant %s's repeat = %q; want its first answer %q", tc.tenant, text, prev)
			}
			pays[tc.tenant] = text
		}
	}
	if pays["a"] == pays["c"] {
		t.Fatalf("both tenants got %q; want a payment each", pays["a"])
	}
	for _, tenant := range []string{"a", "c"} {
		if n := e.paymentsOf(tenant, "order-7"); n != 1 {
			t.Errorf("payments of tenant %s for order-7 = %d; want 1", tenant, n)
		}
	}
}

// Against a key-aware payments server that does not keep keys per tenant
// (no tokens: every call is its tenant "default"), three tenants of one
// ledger send the same key. The client makes their keys distinct on the
// wire: each tenant gets a payment of its own, tenant b with other
// arguments is not told that a's key exists, and no key the server saw
// names a tenant. The same holds for two tenants' proxies.
func TestTenantsAgainstAServerWithoutTenants(t *testing.T) {
	e := newE2E(t)
	url := e.startPaymentsHTTP()
	call := func(tenant string, args ...string) outcome {
		t.Helper()
		return e.run(nil, append([]string{"--json", "--tenant", tenant, "call", "--url", url, "--yes", "--key", "order-7"}, args...)...)
	}
	a := call("a", pay...)
	a.wantExit(t, exitOK)
	c := call("c", pay...)
	c.wantExit(t, exitOK)
	if a.stdout == c.stdout {
		t.Fatalf("tenant c got tenant a's answer %s", a.stdout)
	}
	call("b", "create_payment", "amount_cents=99", "currency=EUR", "payee=other").wantExit(t, exitOK)
	call("c", pay...).wantExit(t, exitOK)
	for _, tenant := range []string{"a", "b", "c"} {
		if n := e.paymentsFor(wire.TenantKey(tenant, "order-7")); n != 1 {
			t.Errorf("payments for tenant %s's order-7 = %d; want 1", tenant, n)
		}
	}
	if n := e.paymentsFor("order-7"); n != 0 {
		t.Errorf("payments under the bare key order-7 = %d; want 0", n)
	}

	texts := map[string]string{}
	for _, tenant := range []string{"p1", "p2"} {
		cs, _ := connectStdioHost(t, proxyEnv(t, "MCPLEDGER_TENANT="+tenant), elicitAnswer("approve_once"), "--url", url)
		for range 2 {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_payment", Arguments: payArgs,
				Meta: mcp.Meta{"io.github.mcpledger/idempotency-key": "order-9"}})
			if err != nil || res.IsError {
				t.Fatalf("proxy of tenant %s: create_payment = %v, %v", tenant, res, err)
			}
			if prev, ok := texts[tenant]; ok && prev != proxyResultText(res) {
				t.Fatalf("tenant %s's repeat = %q; want its first answer %q", tenant, proxyResultText(res), prev)
			}
			texts[tenant] = proxyResultText(res)
		}
		if n := e.paymentsFor(wire.TenantKey(tenant, "order-9")); n != 1 {
			t.Errorf("payments for tenant %s's order-9 = %d; want 1", tenant, n)
		}
	}
	if texts["p1"] == texts["p2"] {
		t.Fatalf("both proxies' tenants got %q; want a payment each", texts["p1"])
	}
}
