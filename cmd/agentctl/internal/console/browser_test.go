package console_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
)

// browser starts Debian's chromium, headless, with a fresh profile and
// nothing that reaches the network. Without chromium the test is skipped,
// except in CI, where .ci/run installs it and its absence is a failure.
func browser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed, and CI must run the browser tests: .ci/run installs it with apt-get install chromium")
		}
		t.Skip("chromium is not installed (apt-get install chromium): the console's browser tests need a real browser")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// shoot saves a screenshot of the page under dir (and, when
// MCPLEDGER_SCREENSHOTS names a folder, there too, for the README).
func shoot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	for _, d := range []string{dir, os.Getenv("MCPLEDGER_SCREENSHOTS")} {
		if d == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(d, name+".png"), png, 0o644); err != nil {
			t.Fatalf("save screenshot: %v", err)
		}
	}
}

func rows(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	if err != nil {
		t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// submit clicks sel, which sends a form, and waits until the browser shows
// the page the form led to: a query made while the old page goes away can
// find a node that never becomes visible.
func submit(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	run(t, ctx, what+": mark the page", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`window.__before = true`)(ctx, tg)
		return err
	}))
	run(t, ctx, what, chromedp.Click(css(sel)))
	deadline := time.Now().Add(20 * time.Second)
	for {
		done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!window.__before && document.readyState === "complete"`))
		if err == nil && done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the page did not change after the click (%v)", what, err)
		}
		run(t, ctx, what+": wait", chromedp.Sleep(50*time.Millisecond))
	}
}

// text is the text of the element sel on the page as it is now ("" when
// there is none); the body's text follows in the failure message.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {innerText: ""}).innerText`, sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

type css = chromedp.CSS

// waitRows waits up to 20 seconds for sel to match a row (a live update),
// then fails naming the rows the page has.
func waitRows(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for rows(t, ctx, sel) == 0 {
		if time.Now().After(deadline) {
			ids, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("tr[data-id]")).map(function (tr) { return tr.getAttribute("data-id"); }).join(" ")`))
			t.Fatalf("%s: no %s after 20s; the rows are %q (%v)", what, sel, ids, err)
		}
		run(t, ctx, what+": wait", chromedp.Sleep(50*time.Millisecond))
	}
}

func TestConsoleInBrowser(t *testing.T) {
	r := newRig(t)
	ctx := browser(t)
	shots := t.TempDir()
	bg := context.Background()

	// The ledger: three paid invoices, one refund whose outcome is unknown,
	// one payment queued for approval.
	for i, amount := range []float64{120, 75.5, 9.99} {
		if _, err := r.agent.Call(client.WithKey(bg, fmt.Sprintf("invoice-%d", i+1)), call("send_invoice", map[string]any{"customer": "acme", "amount": amount})); err != nil {
			t.Fatalf("seed call: %v", err)
		}
	}
	r.unknown(t, "refund-9")
	if _, err := r.agent.Call(client.WithKey(bg, "pay-42"), call("create_payment", map[string]any{"payee": "acme", "amount_cents": 125000, "api_key": "sk-live-1"})); !errors.Is(err, client.ErrAwaitingApproval) {
		t.Fatalf("queue pay-42 = %v; want ErrAwaitingApproval", err)
	}

	t.Run("list shows the records", func(t *testing.T) {
		run(t, ctx, "open the printed URL", chromedp.Navigate(r.web.URL+"/?token="+r.con.Token()), chromedp.WaitVisible(css(`#records`)))
		if n := rows(t, ctx, `#records tr[data-id]`); n != 5 {
			t.Fatalf("records page shows %d rows; want 5", n)
		}
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(loc, "token=") {
			t.Errorf("address %s still holds the token", loc)
		}
		shoot(t, ctx, shots, "records")
	})

	t.Run("a filter narrows it", func(t *testing.T) {
		run(t, ctx, "choose a state", chromedp.SetValue(css(`#f-state`), "unknown"))
		submit(t, ctx, "filter by state", `#apply`)
		if n := rows(t, ctx, `#records tr[data-id]`); n != 1 {
			t.Fatalf("state=unknown shows %d rows; want 1", n)
		}
		run(t, ctx, "filter by tool", chromedp.Navigate(r.web.URL+"/?tool=send_invoice"), chromedp.WaitVisible(css(`#records`)))
		if n := rows(t, ctx, `#records tr[data-id]`); n != 3 {
			t.Fatalf("tool=send_invoice shows %d rows; want 3", n)
		}
	})

	t.Run("a record with its timeline", func(t *testing.T) {
		run(t, ctx, "open the records", chromedp.Navigate(r.web.URL+"/"))
		submit(t, ctx, "open pay-42", `a[href*="key=pay-42"]`)
		if n := rows(t, ctx, `#timeline li`); n < 2 {
			t.Fatalf("timeline has %d entries; want the claim and the state at least", n)
		}
		if state := text(t, ctx, `#state`); state != string(ledger.StatePendingApproval) {
			t.Errorf("record page state = %q; want PENDING_APPROVAL", state)
		}
		shoot(t, ctx, shots, "record")
	})

	t.Run("approving in the page makes the queued call run", func(t *testing.T) {
		run(t, ctx, "open the approvals", chromedp.Navigate(r.web.URL+"/approvals"), chromedp.WaitVisible(css(`tr[data-id="default/client/create_payment/pay-42"]`)))
		shoot(t, ctx, shots, "approvals")
		run(t, ctx, "give a reason", chromedp.SendKeys(css(`tr[data-id="default/client/create_payment/pay-42"] form.approve input[name="reason"]`), "invoice checked"))
		submit(t, ctx, "approve pay-42", `tr[data-id="default/client/create_payment/pay-42"] form.approve button`)
		status := text(t, ctx, `tr[data-id="default/client/create_payment/pay-42"] td:nth-child(6)`)
		if !strings.Contains(status, "approved by ana") {
			t.Fatalf("status after approving = %q; want approved by ana; the page says: %s", status, text(t, ctx, "main"))
		}
		if n := r.runs.Load(); n != 0 {
			t.Fatalf("create_payment ran %d times before the next call; want 0", n)
		}
		out, err := r.agent.Call(client.WithKey(bg, "pay-42"), call("create_payment", map[string]any{"payee": "acme", "amount_cents": 125000, "api_key": "sk-live-1"}))
		if err != nil || out.Result == nil {
			t.Fatalf("the call after approval = %v, %v; want it run", out, err)
		}
		if n := r.runs.Load(); n != 1 {
			t.Fatalf("create_payment ran %d times; want 1", n)
		}
		if rec := r.get(t, ledger.LayerClient, "create_payment", "pay-42"); rec.State != ledger.StateSucceeded || rec.Approval.By != "ana" || rec.Approval.Reason != "invoice checked" {
			t.Errorf("pay-42 = %s approval %+v; want SUCCEEDED approved by ana", rec.State, rec.Approval)
		}
		run(t, ctx, "open pay-42 again", chromedp.Navigate(r.web.URL+"/record?layer=client&tool=create_payment&key=pay-42"), chromedp.WaitVisible(css(`#timeline`)))
		if tl := text(t, ctx, "#timeline"); !strings.Contains(tl, "approved by ana") || !strings.Contains(tl, "SUCCEEDED") {
			t.Errorf("timeline after the run = %q; want the approval and SUCCEEDED", tl)
		}
		shoot(t, ctx, shots, "record-approved")
	})

	t.Run("reconciling an UNKNOWN changes its state", func(t *testing.T) {
		row := `tr[data-id="default//refund/refund-9"]`
		run(t, ctx, "open the unknown page", chromedp.Navigate(r.web.URL+"/unknown"), chromedp.WaitVisible(css(row)))
		shoot(t, ctx, shots, "unknown")
		run(t, ctx, "fill the form",
			chromedp.Click(css(row+` input[value="failed"]`)),
			chromedp.SendKeys(css(row+` input[name="note"]`), "no refund in the bank statement"))
		submit(t, ctx, "reconcile refund-9", row+` button`)
		if n := rows(t, ctx, row); n != 0 {
			t.Errorf("refund-9 is still listed as UNKNOWN after reconciling it")
		}
		rec := r.get(t, "", "refund", "refund-9")
		if rec.State != ledger.StateFailed || !strings.Contains(rec.ErrorMessage, "no refund in the bank statement") || !strings.Contains(rec.ErrorMessage, "ana") {
			t.Fatalf("refund-9 = %s %q; want FAILED with ana's note", rec.State, rec.ErrorMessage)
		}
	})

	t.Run("a new record appears live", func(t *testing.T) {
		run(t, ctx, "open the records", chromedp.Navigate(r.web.URL+"/"), chromedp.WaitVisible(css(`#live.on`)))
		before := rows(t, ctx, `#records tr[data-id]`)
		if _, err := r.agent.Call(client.WithKey(bg, "invoice-live"), call("send_invoice", map[string]any{"customer": "globex", "amount": 310})); err != nil {
			t.Fatalf("new call: %v", err)
		}
		run(t, ctx, "wait for the new row", chromedp.WaitVisible(css(`#records tr[data-id="default/client/send_invoice/invoice-live"]`)))
		if n := rows(t, ctx, `#records tr[data-id]`); n != before+1 {
			t.Errorf("rows after the new call = %d; want %d", n, before+1)
		}
		shoot(t, ctx, shots, "records-live")
	})

	t.Run("stats as charts", func(t *testing.T) {
		run(t, ctx, "open the stats", chromedp.Navigate(r.web.URL+"/stats"), chromedp.WaitVisible(css(`svg.chart`)))
		if n := rows(t, ctx, `svg.chart`); n != 3 {
			t.Errorf("stats page has %d charts; want 3", n)
		}
		shoot(t, ctx, shots, "stats")
	})

	for _, name := range []string{"records", "record", "approvals", "record-approved", "unknown", "records-live", "stats"} {
		if info, err := os.Stat(filepath.Join(shots, name+".png")); err != nil || info.Size() == 0 {
			t.Errorf("screenshot %s: %v", name, err)
		}
	}
}

// Records of one key in several layers, in the browser: a row each, the
// layer filter (live updates included), each record's page, and an
// approval of the proxy's record that leaves the client's waiting.
func TestLayersInBrowser(t *testing.T) {
	r := newRig(t)
	ctx := browser(t)
	shots := t.TempDir()
	bg := context.Background()
	r.succeededIn(t, ledger.LayerClient, "refund-7", "refund r-1 issued")
	r.unknownIn(t, ledger.LayerServer, "refund-7")
	proxy := r.clientIn(t, ledger.LayerProxy)
	pay := call("create_payment", map[string]any{"payee": "acme", "amount_cents": 700})
	for _, c := range []*client.Client{r.agent, proxy} {
		if _, err := c.Call(client.WithKey(bg, "pay-7"), pay); !errors.Is(err, client.ErrAwaitingApproval) {
			t.Fatalf("queue pay-7 = %v; want ErrAwaitingApproval", err)
		}
	}
	refundClient, refundServer := `tr[data-id="default/client/refund/refund-7"]`, `tr[data-id="default/server/refund/refund-7"]`

	t.Run("one row per layer", func(t *testing.T) {
		run(t, ctx, "open the printed URL", chromedp.Navigate(r.web.URL+"/?token="+r.con.Token()), chromedp.WaitVisible(css(`#records`)))
		if n := rows(t, ctx, `#records tr[data-id]`); n != 4 {
			t.Fatalf("records page shows %d rows; want 4 (refund-7 in client and server, pay-7 in client and proxy)", n)
		}
		for sel, want := range map[string]string{refundClient: "client", refundServer: "server", `tr[data-id="default/proxy/create_payment/pay-7"]`: "proxy"} {
			if got := text(t, ctx, "#records "+sel+" td.layer"); got != want {
				t.Errorf("layer cell of %s = %q; want %q", sel, got, want)
			}
		}
		shoot(t, ctx, shots, "records-layers")
	})

	t.Run("the layer filter keeps one, live updates too", func(t *testing.T) {
		run(t, ctx, "choose a layer", chromedp.SetValue(css(`#f-layer`), "server"))
		submit(t, ctx, "filter by layer", `#apply`)
		if n := rows(t, ctx, `#records tr[data-id]`); n != 1 || rows(t, ctx, "#records "+refundServer) != 1 {
			t.Fatalf("layer=server shows %d rows; want only the server's refund-7", n)
		}
		run(t, ctx, "wait for live updates", chromedp.WaitVisible(css(`#live.on`)))
		// A new record in layer client, then one in layer server: only the
		// server's reaches the page.
		r.succeededIn(t, ledger.LayerClient, "refund-8", "refund r-2 issued")
		r.unknownIn(t, ledger.LayerServer, "refund-8")
		waitRows(t, ctx, "wait for the server's new row", `#records tr[data-id="default/server/refund/refund-8"]`)
		if n := rows(t, ctx, `#records tr[data-id="default/client/refund/refund-8"]`); n != 0 {
			t.Errorf("the client's refund-8 appeared on the page filtered to layer server")
		}
		if got := text(t, ctx, `#records tr[data-id="default/server/refund/refund-8"] td.layer`); got != "server" {
			t.Errorf("the live row's layer = %q; want server", got)
		}
	})

	t.Run("a live record of a key in another layer is a row of its own", func(t *testing.T) {
		run(t, ctx, "open the records", chromedp.Navigate(r.web.URL+"/"), chromedp.WaitVisible(css(`#live.on`)))
		before := rows(t, ctx, `#records tr[data-id]`)
		r.unknownIn(t, ledger.LayerProxy, "refund-7")
		waitRows(t, ctx, "wait for the proxy's row", `#records tr[data-id="default/proxy/refund/refund-7"]`)
		if n := rows(t, ctx, `#records tr[data-id]`); n != before+1 {
			t.Errorf("rows after the proxy's refund-7 = %d; want %d", n, before+1)
		}
		if got := text(t, ctx, "#records "+refundClient+" .state"); got != "SUCCEEDED" {
			t.Errorf("the client's refund-7 row shows %q; want SUCCEEDED, untouched by the proxy's record", got)
		}
	})

	t.Run("each record's page shows its own state", func(t *testing.T) {
		for _, tc := range []struct{ row, layer, state string }{{refundClient, "client", "SUCCEEDED"}, {refundServer, "server", "UNKNOWN"}} {
			run(t, ctx, "open the records", chromedp.Navigate(r.web.URL+"/"), chromedp.WaitVisible(css(`#records`)))
			submit(t, ctx, "open the "+tc.layer+"'s refund-7", "#records "+tc.row+" a")
			if got := text(t, ctx, "#state"); got != tc.state {
				t.Errorf("the %s's refund-7 page state = %q; want %s", tc.layer, got, tc.state)
			}
			if got := text(t, ctx, "#layer"); got != tc.layer {
				t.Errorf("the %s's refund-7 page layer = %q", tc.layer, got)
			}
		}
		shoot(t, ctx, shots, "record-layer")
	})

	t.Run("approving the proxy's record leaves the client's waiting", func(t *testing.T) {
		proxyRow, clientRow := `tr[data-id="default/proxy/create_payment/pay-7"]`, `tr[data-id="default/client/create_payment/pay-7"]`
		run(t, ctx, "open the approvals", chromedp.Navigate(r.web.URL+"/approvals"), chromedp.WaitVisible(css(proxyRow)))
		run(t, ctx, "give a reason", chromedp.SendKeys(css(proxyRow+` form.approve input[name="reason"]`), "proxy checked"))
		submit(t, ctx, "approve the proxy's pay-7", proxyRow+` form.approve button`)
		if status := text(t, ctx, proxyRow+` td:nth-child(6)`); !strings.Contains(status, "approved by ana") {
			t.Fatalf("proxy's status = %q; want approved by ana; the page says: %s", status, text(t, ctx, "main"))
		}
		if status := text(t, ctx, clientRow+` td:nth-child(6)`); !strings.Contains(status, "waits for a decision") {
			t.Errorf("client's status = %q; want it still waiting", status)
		}
		if rec := r.get(t, ledger.LayerProxy, "create_payment", "pay-7"); rec.Approval == nil || rec.Approval.By != "ana" || rec.Approval.Reason != "proxy checked" {
			t.Errorf("proxy's pay-7 approval = %+v; want ana's", rec.Approval)
		}
		if rec := r.get(t, ledger.LayerClient, "create_payment", "pay-7"); rec.State != ledger.StatePendingApproval || rec.Approval != nil {
			t.Errorf("client's pay-7 = %s approval %+v; want PENDING_APPROVAL, undecided", rec.State, rec.Approval)
		}
		shoot(t, ctx, shots, "approvals-layers")
	})
}
