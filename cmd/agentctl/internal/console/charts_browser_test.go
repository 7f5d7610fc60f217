package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpledger/mcpledger/cmd/agentctl/internal/console"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// chartsRig is a console over a SQLite ledger whose clock the test sets,
// with call events and records placed in a known hour.
type chartsRig struct {
	st    *sqlite.Store
	clock *ledgertest.Clock
	con   *console.Console
	web   *httptest.Server
	// since is the start of the 1h range's first interval.
	since time.Time
}

// The hour the charts show: now is 12:20:30, so the 1h range's 60
// one-minute intervals run from 11:21 to 12:21, the last ending now.
var chartsNow = time.Date(2026, 7, 1, 12, 20, 30, 0, time.UTC)

func newChartsRig(t *testing.T) *chartsRig {
	t.Helper()
	ctx := context.Background()
	r := &chartsRig{clock: ledgertest.NewClock(time.Date(2026, 7, 1, 11, 0, 0, 0, time.UTC)), since: time.Date(2026, 7, 1, 11, 21, 0, 0, time.UTC)}
	var err error
	r.st, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), &sqlite.Options{Now: r.clock.Now})
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() { r.st.Close() })
	r.con, err = console.New(console.Options{Store: r.st, Tenant: "default", Who: "ana", Now: r.clock.Now})
	if err != nil {
		t.Fatalf("console.New = %v", err)
	}
	r.web = httptest.NewServer(r.con)
	t.Cleanup(r.web.Close)

	// Call events, as the client's event writer leaves them.
	at := func(hh, mm, ss int) time.Time { return time.Date(2026, 7, 1, hh, mm, ss, 0, time.UTC) }
	ev := func(when time.Time, tool string, o ledger.Outcome, dup bool, lat time.Duration) ledger.Event {
		return ledger.Event{Tenant: "default", Tool: tool, Side: ledger.SideClient, Outcome: o, Duplicate: dup, Latency: lat, At: when}
	}
	r.appendEvents(t,
		ev(at(11, 30, 10), "create_payment", ledger.OutcomeSucceeded, false, 3*time.Millisecond),
		ev(at(11, 30, 20), "create_payment", ledger.OutcomeSucceeded, false, 3*time.Millisecond),
		ev(at(11, 30, 40), "create_payment", ledger.OutcomeReplayed, true, 200*time.Microsecond),
		ev(at(12, 0, 5), "send_invoice", ledger.OutcomeSucceeded, false, 30*time.Millisecond),
		ev(at(12, 0, 6), "create_payment", ledger.OutcomeKeyConflict, false, 50*time.Microsecond),
		ev(at(12, 20, 0), "create_payment", ledger.OutcomeReplayed, true, 200*time.Microsecond),
		ev(at(12, 20, 1), "create_payment", ledger.OutcomeReplayed, true, 200*time.Microsecond),
		ev(at(10, 0, 0), "create_payment", ledger.OutcomeSucceeded, false, time.Millisecond), // before the range
	)

	// Records: refund-1 UNKNOWN since 11:40; refund-2 UNKNOWN from 11:50
	// until a person resolved it at 12:10; pay-7 waiting for approval
	// since 12:00.
	r.clock.Set(at(11, 40, 0))
	r.unknown(t, "refund-1")
	r.clock.Set(at(11, 50, 0))
	rec := r.unknown(t, "refund-2")
	r.clock.Set(at(12, 0, 0))
	if _, err := r.st.Claim(ctx, ledger.ClaimRequest{ID: ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "create_payment", Key: "pay-7"},
		Fingerprint: "f-pay-7", Owner: "agent", NeedsApproval: true, Lease: 24 * time.Hour}); err != nil {
		t.Fatalf("Claim(pay-7, NeedsApproval) = %v", err)
	}
	r.clock.Set(at(12, 10, 0))
	if _, err := ledger.Resolve(ctx, r.st, rec, ledger.Finding{Verdict: ledger.VerdictNotRun, Method: ledger.MethodPerson, By: "ana", Evidence: "no refund at the bank"}); err != nil {
		t.Fatalf("Resolve(refund-2) = %v", err)
	}
	r.clock.Set(chartsNow)
	return r
}

func (r *chartsRig) appendEvents(t *testing.T, events ...ledger.Event) {
	t.Helper()
	if err := r.st.AppendEvents(context.Background(), events); err != nil {
		t.Fatalf("AppendEvents = %v", err)
	}
}

func (r *chartsRig) unknown(t *testing.T, key string) *ledger.Record {
	t.Helper()
	ctx := context.Background()
	id := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "refund", Key: key}
	cl, err := r.st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "f-" + key, Owner: "gone"})
	if err != nil {
		t.Fatalf("Claim(%s) = %v", key, err)
	}
	rec, err := r.st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "gone", Fence: cl.Record.Fence, ErrorKind: "ambiguous", AddAttempts: 1})
	if err != nil {
		t.Fatalf("Transition(%s to UNKNOWN) = %v", key, err)
	}
	return rec
}

// drawn is what a chart on the page holds: its series' labels and uPlot's
// data, x first.
type drawn struct {
	Labels []string     `json:"labels"`
	Data   [][]*float64 `json:"data"`
}

// chartsOnPage reads every chart's uPlot data from the page, and counts
// the canvases drawn.
func chartsOnPage(t *testing.T, ctx context.Context) (map[string]drawn, int) {
	t.Helper()
	js, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(Object.fromEntries(Object.entries(window.mcpledgerCharts || {}).map(function (e) {
		return [e[0], {labels: e[1].series.slice(1).map(function (s) { return s.label; }), data: e[1].data}];
	})))`))
	if err != nil {
		t.Fatalf("read the charts: %v", err)
	}
	var out map[string]drawn
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		t.Fatalf("charts JSON %s: %v", js, err)
	}
	return out, rows(t, ctx, `#charts figure canvas`)
}

// points is a series' values by interval, for the intervals that have one.
func points(t *testing.T, d drawn, label string) map[int]float64 {
	t.Helper()
	for i, l := range d.Labels {
		if l == label {
			out := map[int]float64{}
			for b, v := range d.Data[i+1] {
				if v != nil {
					out[b] = *v
				}
			}
			return out
		}
	}
	t.Fatalf("no series %q; the chart has %q", label, d.Labels)
	return nil
}

// TestChartsInBrowser opens the Stats page in chromium, reads every
// chart's points from its uPlot and checks them against the events and
// records placed in the hour, then adds a call and waits for the page's
// poll to draw it.
func TestChartsInBrowser(t *testing.T) {
	r := newChartsRig(t)
	ctx := browser(t)
	run(t, ctx, "open the stats page over the last hour", chromedp.Navigate(r.web.URL+"/stats?range=1h&token="+r.con.Token()),
		chromedp.Poll[chromedp.Void](`document.querySelector("#charts[data-drawn]") !== null`, chromedp.WithPollingTimeout(30*time.Second)))
	got, canvases := chartsOnPage(t, ctx)
	ids := []string{"calls", "outcomes", "shares", "latency", "unknown", "unknown-age", "approvals", "approval-age", "resolution"}
	if len(got) != len(ids) || canvases < len(ids) {
		t.Fatalf("page has %d charts and %d canvases; want %d of each (%q)", len(got), canvases, len(ids), ids)
	}
	// x: one point per one-minute interval, each at its end; the last now.
	for _, id := range ids {
		x := got[id].Data[0]
		if len(x) != 60 || *x[0] != float64(r.since.Add(time.Minute).Unix()) || *x[59] != float64(chartsNow.Unix()) {
			t.Fatalf("chart %s has %d points from %v to %v; want 60, from 11:22 to now", id, len(x), x[0], x[len(x)-1])
		}
		for i, s := range got[id].Data[1:] {
			if len(s) != 60 {
				t.Errorf("chart %s series %s has %d points; want 60", id, got[id].Labels[i], len(s))
			}
		}
	}
	// Interval b starts at 11:21 + b minutes.
	const b1130, b1200, b1220 = 9, 39, 59
	eq := func(what string, got map[int]float64, want map[int]float64) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s = %v; want %v", what, got, want)
			return
		}
		for b, w := range want {
			if g, ok := got[b]; !ok || math.Abs(g-w) > 1e-9 {
				t.Errorf("%s at interval %d = %v; want %v (all: %v)", what, b, got[b], w, got)
			}
		}
	}
	nonzero := func(m map[int]float64) map[int]float64 {
		out := map[int]float64{}
		for b, v := range m {
			if v != 0 {
				out[b] = v
			}
		}
		return out
	}
	eq("calls of create_payment", nonzero(points(t, got["calls"], "create_payment")), map[int]float64{b1130: 3, b1200: 1, b1220: 2})
	eq("calls of send_invoice", nonzero(points(t, got["calls"], "send_invoice")), map[int]float64{b1200: 1})
	eq("succeeded", nonzero(points(t, got["outcomes"], "succeeded")), map[int]float64{b1130: 2, b1200: 1})
	eq("replayed", nonzero(points(t, got["outcomes"], "replayed")), map[int]float64{b1130: 1, b1220: 2})
	eq("key_conflict", nonzero(points(t, got["outcomes"], "key_conflict")), map[int]float64{b1200: 1})
	eq("replay share", points(t, got["shares"], "replayed"), map[int]float64{b1130: 1.0 / 3, b1200: 0, b1220: 1})
	eq("duplicate share", points(t, got["shares"], "duplicate"), map[int]float64{b1130: 1.0 / 3, b1200: 0, b1220: 1})
	eq("latency p50", points(t, got["latency"], "p50"), map[int]float64{b1130: 0.005, b1200: 0.0001, b1220: 0.00025})
	eq("latency p99", points(t, got["latency"], "p99"), map[int]float64{b1130: 0.005, b1200: 0.05, b1220: 0.00025})
	// UNKNOWN open at each interval's end: refund-1 from 11:40 (interval
	// 18 ends then), refund-2 from 11:50 (27) until 12:10 (48 ends then).
	open, age := map[int]float64{}, map[int]float64{}
	for b := 18; b < 60; b++ {
		end := r.since.Add(time.Duration(b+1) * time.Minute)
		if b == 59 {
			end = chartsNow
		}
		open[b] = 1
		if b >= 28 && b < 48 {
			open[b] = 2
		}
		if b > 18 { // at 11:40 itself it is 0 s old
			age[b] = end.Sub(time.Date(2026, 7, 1, 11, 40, 0, 0, time.UTC)).Seconds()
		}
	}
	eq("UNKNOWN open", nonzero(points(t, got["unknown"], "open")), open)
	eq("oldest UNKNOWN age", nonzero(points(t, got["unknown-age"], "oldest")), age)
	waiting := map[int]float64{}
	for b := 38; b < 60; b++ {
		waiting[b] = 1
	}
	eq("approvals waiting", nonzero(points(t, got["approvals"], "waiting")), waiting)
	eq("time to resolution p50", points(t, got["resolution"], "p50"), map[int]float64{49: 1200})
	eq("longest time to resolution", points(t, got["resolution"], "longest"), map[int]float64{49: 1200})
	shoot(t, ctx, t.TempDir(), "console-charts")

	// Live: a call at 12:20:10 appears at the next poll, no reload.
	r.appendEvents(t, ledger.Event{Tenant: "default", Tool: "create_payment", Side: ledger.SideClient, Outcome: ledger.OutcomeReplayed, Duplicate: true,
		Latency: 200 * time.Microsecond, At: time.Date(2026, 7, 1, 12, 20, 10, 0, time.UTC)})
	run(t, ctx, "wait for the poll to draw the new call", chromedp.Poll[chromedp.Void](fmt.Sprintf(
		`(function () { var u = window.mcpledgerCharts.calls; var i = u.series.findIndex(function (s) { return s.label === "create_payment"; }); return u.data[i][%d] === 3; })()`, b1220),
		chromedp.WithPollingTimeout(30*time.Second)))
}

// TestChartsRange checks the ranges the page offers and refuses others.
func TestChartsRange(t *testing.T) {
	r := newChartsRig(t)
	c := r.web.Client()
	for _, tc := range []struct {
		rng    string
		status int
		points int
	}{{"1h", 200, 60}, {"24h", 200, 48}, {"7d", 200, 28}, {"30d", 400, 0}, {"", 400, 0}} {
		req := httptest.NewRequest("GET", r.web.URL+"/stats/series?range="+tc.rng, nil)
		req.RequestURI = ""
		req.Header.Set("X-Console-Token", r.con.Token())
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET range=%s: %v", tc.rng, err)
		}
		var tl struct {
			X      []int64 `json:"x"`
			Charts []struct {
				ID string `json:"id"`
			} `json:"charts"`
		}
		if resp.StatusCode == 200 {
			if err := json.NewDecoder(resp.Body).Decode(&tl); err != nil {
				t.Fatalf("range=%s: %v", tc.rng, err)
			}
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || len(tl.X) != tc.points {
			t.Errorf("GET /stats/series?range=%s = %d with %d points; want %d with %d", tc.rng, resp.StatusCode, len(tl.X), tc.status, tc.points)
		}
		if tc.status == 200 && len(tl.Charts) != 9 {
			t.Errorf("range=%s has %d charts; want 9", tc.rng, len(tl.Charts))
		}
	}
}
