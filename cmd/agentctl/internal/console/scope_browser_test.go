package console_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/cmd/agentctl/internal/console"
	"github.com/mcpledger/mcpledger/ledger"
)

// A console serves its approvers' tenants only: ana's token reaches tenant
// default, and neither ?tenant=t2 nor a form posted with tenant=t2 reaches
// t2's records. Arguments read as the person typed them, whole on the
// approvals page; decisions carry the name of the token used.
func TestConsoleScopeAndLegibility(t *testing.T) {
	r := newRig(t)
	const anaToken, bobToken = "ana-token-0123456789", "bob-token-0123456789"
	con, err := console.New(console.Options{Store: r.st, Tenant: "default", Policy: r.policy, Poll: 100 * time.Millisecond,
		Approvers: []console.Approver{{Token: anaToken, Name: "ana"}, {Token: bobToken, Name: "bob", Tenants: []string{"default", "t2"}}}})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(con)
	t.Cleanup(web.Close)
	ctx := browser(t)
	bg := context.Background()

	// t2's agent queues a payment; default's agent queues one whose
	// arguments hold markup and a long memo.
	t2 := r.tenantClient(t, "t2")
	if _, err := t2.Call(client.WithKey(bg, "t2-pay"), call("create_payment", map[string]any{"payee": "t2-secret-payee", "amount_cents": 5})); !errors.Is(err, client.ErrAwaitingApproval) {
		t.Fatalf("queue t2-pay = %v", err)
	}
	memo := strings.Repeat("invoice line; ", 40) + "END-OF-MEMO"
	args := map[string]any{"payee": `<script>alert(1)</script> & Söhne`, "memo": memo, "amount_cents": 125000}
	if _, err := r.agent.Call(client.WithKey(bg, "pay-9"), call("create_payment", args)); !errors.Is(err, client.ErrAwaitingApproval) {
		t.Fatalf("queue pay-9 = %v", err)
	}
	row := `tr[data-id="default/client/create_payment/pay-9"]`

	t.Run("the approvals page shows the arguments whole and readable", func(t *testing.T) {
		run(t, ctx, "open as ana", chromedp.Navigate(web.URL+"/approvals?token="+anaToken), chromedp.WaitVisible(css(row)))
		got := text(t, ctx, row+" pre.args")
		for _, want := range []string{`<script>alert(1)</script> & Söhne`, "END-OF-MEMO", memo} {
			if !strings.Contains(got, want) {
				t.Errorf("approvals page arguments = %q; want %q in them", got, want)
			}
		}
		if strings.Contains(got, `\u003c`) || strings.Contains(got, "…") {
			t.Errorf("approvals page arguments = %q; want no JSON escapes and nothing cut", got)
		}
		if n := rows(t, ctx, "script:not([src])"); n != 0 {
			t.Errorf("the page holds %d inline scripts: the arguments were not escaped", n)
		}
		if n := rows(t, ctx, `tr[data-id^="t2/"]`); n != 0 {
			t.Errorf("ana's approvals page lists %d records of tenant t2", n)
		}
		submit(t, ctx, "open pay-9", row+` a[href*="key=pay-9"]`)
		if got := text(t, ctx, "#arguments"); !strings.Contains(got, `<script>alert(1)</script> & Söhne`) || strings.Contains(got, `\u0026`) {
			t.Errorf("record page arguments = %q; want them readable", got)
		}
	})

	t.Run("another tenant is refused in every read", func(t *testing.T) {
		for _, path := range []string{"/?tenant=t2", "/approvals?tenant=t2", "/record?tenant=t2&layer=client&tool=create_payment&key=t2-pay", "/stats?tenant=t2", "/events?tenant=t2"} {
			run(t, ctx, "open "+path, chromedp.Navigate(web.URL+path), chromedp.WaitReady(css("body")))
			body := text(t, ctx, "body")
			if !strings.Contains(body, "ana may see tenant default only, not t2") || strings.Contains(body, "t2-pay") || strings.Contains(body, "t2-secret-payee") {
				t.Errorf("%s as ana shows %q; want it refused", path, body)
			}
		}
	})

	t.Run("a form posted for another tenant is refused", func(t *testing.T) {
		run(t, ctx, "open the approvals", chromedp.Navigate(web.URL+"/approvals"), chromedp.WaitVisible(css(row)))
		// The page's own form, pointed at t2's record.
		run(t, ctx, "point the form at t2", chromedp.Evaluate[chromedp.Void](`(function () {
			var f = document.querySelector('`+row+` form.approve');
			f.querySelector('input[name="tenant"]').value = "t2";
			f.querySelector('input[name="key"]').value = "t2-pay";
		})()`))
		submit(t, ctx, "post the approval for t2", row+` form.approve button`)
		if body := text(t, ctx, "body"); !strings.Contains(body, "not t2") {
			t.Errorf("posting tenant=t2 as ana = %q; want it refused", body)
		}
		rec, err := r.st.Get(bg, ledger.ID{Tenant: "t2", Layer: ledger.LayerClient, Tool: "create_payment", Key: "t2-pay"})
		if err != nil || rec.Approval != nil || rec.State != ledger.StatePendingApproval {
			t.Fatalf("t2-pay after ana's post = %+v, %v; want it undecided", rec, err)
		}
	})

	t.Run("each approver's decision carries their token's name", func(t *testing.T) {
		run(t, ctx, "open as ana", chromedp.Navigate(web.URL+"/approvals?token="+anaToken), chromedp.WaitVisible(css(row)))
		submit(t, ctx, "ana approves pay-9", row+` form.approve button`)
		if rec := r.get(t, ledger.LayerClient, "create_payment", "pay-9"); rec.Approval == nil || rec.Approval.By != "ana" || rec.Approval.Via != "console" {
			t.Errorf("pay-9 approval = %+v; want by ana in the console", rec.Approval)
		}
		t2row := `tr[data-id="t2/client/create_payment/t2-pay"]`
		run(t, ctx, "open t2 as bob", chromedp.Navigate(web.URL+"/approvals?tenant=t2&token="+bobToken), chromedp.WaitVisible(css(t2row)))
		submit(t, ctx, "bob approves t2-pay", t2row+` form.approve button`)
		rec, err := r.st.Get(bg, ledger.ID{Tenant: "t2", Layer: ledger.LayerClient, Tool: "create_payment", Key: "t2-pay"})
		if err != nil || rec.Approval == nil || rec.Approval.By != "bob" {
			t.Errorf("t2-pay = %+v, %v; want approved by bob", rec, err)
		}
	})
}

// tenantClient is an agent of tenant on the rig's server and ledger.
func (r *rig) tenantClient(t *testing.T, tenant string) *client.Client {
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
	c, err := client.Dial(context.Background(), connect, r.st, &client.Options{Policy: r.policy, Session: "agent-t", Requester: "agent", Tenant: tenant})
	if err != nil {
		t.Fatalf("client.Dial = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// An approval whose expiry passed reads REJECTED on every page at once,
// before any sweep writes it so, and cannot be approved.
func TestConsoleExpiredApprovalInBrowser(t *testing.T) {
	r := newRig(t)
	bg := context.Background()
	if _, err := r.agent.Call(client.WithKey(bg, "pay-old"), call("create_payment", map[string]any{"payee": "acme", "amount_cents": 5})); !errors.Is(err, client.ErrAwaitingApproval) {
		t.Fatalf("queue pay-old = %v", err)
	}
	// Two days later: past the default expiry of a day.
	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	con, err := console.New(console.Options{Store: r.st, Tenant: "default", Who: "ana", Policy: r.policy, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(con)
	t.Cleanup(web.Close)
	ctx := browser(t)
	row := `tr[data-id="default/client/create_payment/pay-old"]`
	run(t, ctx, "open the approvals", chromedp.Navigate(web.URL+"/approvals?token="+con.Token()), chromedp.WaitVisible(css(`#queue`)))
	if n := rows(t, ctx, row); n != 0 {
		t.Errorf("the approvals page lists the expired pay-old")
	}
	if c := text(t, ctx, "#pending-count"); c != "0" {
		t.Errorf("pending count = %q; want 0", c)
	}
	run(t, ctx, "open the records", chromedp.Navigate(web.URL+"/"), chromedp.WaitVisible(css(row)))
	if s := text(t, ctx, row+" .state"); s != string(ledger.StateRejected) {
		t.Errorf("records page shows pay-old %q; want REJECTED", s)
	}
	run(t, ctx, "filter rejected", chromedp.Navigate(web.URL+"/?state=rejected"), chromedp.WaitVisible(css(`#records`)))
	if n := rows(t, ctx, "#records "+row); n != 1 {
		t.Errorf("state=rejected shows pay-old %d times; want once", n)
	}
	submit(t, ctx, "open pay-old", row+` a[href*="key=pay-old"]`)
	if s := text(t, ctx, "#state"); s != string(ledger.StateRejected) {
		t.Errorf("record page state = %q; want REJECTED", s)
	}
	if n := rows(t, ctx, "form.approve"); n != 0 {
		t.Errorf("the record page of an expired approval offers %d approve forms", n)
	}
	if rec := r.get(t, ledger.LayerClient, "create_payment", "pay-old"); rec.State != ledger.StatePendingApproval {
		t.Errorf("stored pay-old = %s; reading must write nothing", rec.State)
	}
}
