package console_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpledger/mcpledger/cmd/agentctl/internal/console"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// The reconciliation in the browser: the UNKNOWN list shows how long each
// record has been UNKNOWN and the attempts made on it; a record's page
// shows what settled it (method, by, at, evidence), how many attempts
// were made, and each in its timeline.
func TestReconciliationInBrowser(t *testing.T) {
	clock := ledgertest.NewClock(time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC))
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), &sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() { st.Close() })
	a := &apiRig{rig: newRigOn(t, st)}
	a.con, err = console.New(console.Options{Store: st, Tenant: "default", Who: "ana", Now: clock.Now,
		Reconcilers: []console.Reconciler{{Token: payToken, Name: "payments-db"}}})
	if err != nil {
		t.Fatalf("console.New = %v", err)
	}
	a.api = httptest.NewServer(a.con)
	t.Cleanup(a.api.Close)
	ctx := browser(t)
	shots := t.TempDir()
	bg := context.Background()

	// r-wait became UNKNOWN 2h 5m ago and a probe found nothing since;
	// r-paid was probed in vain, then a callback reported it.
	a.unknownOf(t, "default", ledger.LayerProxy, "r-wait")
	a.unknownOf(t, "default", ledger.LayerProxy, "r-paid")
	clock.Advance(2*time.Hour + 5*time.Minute)
	for _, key := range []string{"r-wait", "r-paid"} {
		rec := a.get(t, ledger.LayerProxy, "refund", key)
		if _, err := ledger.Resolve(bg, st, rec, ledger.Finding{Verdict: ledger.VerdictUnknown, Method: ledger.MethodProbe, By: "find_refund", Evidence: "no refund with key " + key + " yet"}); err != nil {
			t.Fatalf("Resolve(%s, unknown) = %v", key, err)
		}
	}
	clock.Advance(2 * time.Second)
	if code, ans := a.post(t, "POST", payToken, `{"tool":"refund","key":"r-paid","outcome":"succeeded","evidence":"refunds table row 9"}`); code != 200 {
		t.Fatalf("report r-paid = %d %+v; want 200", code, ans)
	}

	t.Run("the UNKNOWN list shows age and attempts", func(t *testing.T) {
		row := `tr[data-id="default/proxy/refund/r-wait"]`
		run(t, ctx, "open the unknown page", chromedp.Navigate(a.api.URL+"/unknown?token="+a.con.Token()), chromedp.WaitVisible(css(row)))
		shoot(t, ctx, shots, "unknown-reconciliation")
		if age := text(t, ctx, row+` td.age`); age != "2h 5m" {
			t.Errorf("r-wait is UNKNOWN for %q; want 2h 5m (the page: %s)", age, text(t, ctx, "main"))
		}
		att := text(t, ctx, row+` td.reconciliation`)
		for _, want := range []string{"1 attempt", "last: unknown by probe (find_refund)", "no refund with key r-wait yet", "next attempt in"} {
			if !strings.Contains(att, want) {
				t.Errorf("r-wait's attempts = %q; want it to say %q", att, want)
			}
		}
		if n := rows(t, ctx, `tr[data-id="default/proxy/refund/r-paid"]`); n != 0 {
			t.Errorf("r-paid is still listed as UNKNOWN after the report settled it")
		}
	})

	t.Run("a settled record shows its resolution and attempts", func(t *testing.T) {
		run(t, ctx, "open r-paid", chromedp.Navigate(a.api.URL+"/record?layer=proxy&tool=refund&key=r-paid"), chromedp.WaitVisible(css(`#resolution`)))
		shoot(t, ctx, shots, "record-reconciled")
		res := text(t, ctx, `#resolution`)
		for _, want := range []string{"found by callback (payments-db)", "2026-07-01 11:05:02Z", "refunds table row 9"} {
			if !strings.Contains(res, want) {
				t.Errorf("r-paid's resolution = %q; want it to say %q", res, want)
			}
		}
		if n := text(t, ctx, `#findings`); n != "2" {
			t.Errorf("r-paid's reconcile attempts = %q; want 2 (the page: %s)", n, text(t, ctx, "main"))
		}
		hist := text(t, ctx, `#timeline`)
		probe, cb := strings.Index(hist, "reconcile: unknown by probe (find_refund)"), strings.Index(hist, "reconcile: found by callback (payments-db)")
		if probe < 0 || cb < probe {
			t.Errorf("r-paid's timeline = %q; want the probe's attempt, then the callback's finding", hist)
		}
		if n := rows(t, ctx, `#age`); n != 0 {
			t.Errorf("a SUCCEEDED record shows an UNKNOWN age: %q", text(t, ctx, `#age`))
		}
	})

	t.Run("an UNKNOWN record shows its age and attempts", func(t *testing.T) {
		run(t, ctx, "open r-wait", chromedp.Navigate(a.api.URL+"/record?layer=proxy&tool=refund&key=r-wait"), chromedp.WaitVisible(css(`#age`)))
		if age := text(t, ctx, `#age`); !strings.HasPrefix(age, "2h 5m") {
			t.Errorf("r-wait's age = %q; want 2h 5m", age)
		}
		if n := rows(t, ctx, `#resolution`); n != 0 {
			t.Errorf("an UNKNOWN record shows a resolution: %q", text(t, ctx, `#resolution`))
		}
		if n := text(t, ctx, `#findings`); n != "1" {
			t.Errorf("r-wait's reconcile attempts = %q; want 1", n)
		}
		if hist := text(t, ctx, `#timeline`); !strings.Contains(hist, "reconcile: unknown by probe (find_refund)") {
			t.Errorf("r-wait's timeline = %q; want the probe's attempt", hist)
		}
	})
}
