package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcpledger/mcpledger/cmd/agentctl/internal/console"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/telemetry"
)

const (
	payToken   = "payments-db-token-0123456789"
	otherToken = "billing-token-0123456789abcdef"
)

// apiRig is the console of tenant default with two reconcilers, over real
// HTTP on 127.0.0.1, on the rig's real SQLite ledger, reporting metrics to
// a manual reader.
type apiRig struct {
	*rig
	api    *httptest.Server
	con    *console.Console
	reader *sdkmetric.ManualReader
}

func newAPIRig(t *testing.T) *apiRig {
	t.Helper()
	a := &apiRig{rig: newRig(t), reader: sdkmetric.NewManualReader()}
	var err error
	a.con, err = console.New(console.Options{
		Store: a.st, Tenant: "default", Who: "ana",
		Reconcilers: []console.Reconciler{
			{Token: payToken, Name: "payments-db"},
			{Token: otherToken, Name: "billing", Tenants: []string{"default", "t2"}},
		},
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(a.reader)),
	})
	if err != nil {
		t.Fatalf("console.New = %v", err)
	}
	a.api = httptest.NewServer(a.con)
	t.Cleanup(a.api.Close)
	return a
}

// unknownOf leaves an UNKNOWN refund record of key in tenant and layer.
func (a *apiRig) unknownOf(t *testing.T, tenant, layer, key string) {
	t.Helper()
	ctx := context.Background()
	id := ledger.ID{Tenant: tenant, Layer: layer, Tool: "refund", Key: key}
	cl, err := a.st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "f-" + key, Owner: "gone-worker"})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	if _, err := a.st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "gone-worker", Fence: cl.Record.Fence,
		ErrorKind: "ambiguous", ErrorMessage: "the connection dropped after the request was sent", AddAttempts: 1}); err != nil {
		t.Fatalf("Transition = %v", err)
	}
}

type apiAnswer struct {
	Tenant     string             `json:"tenant"`
	Layer      *string            `json:"layer"`
	Tool       string             `json:"tool"`
	Key        string             `json:"key"`
	State      ledger.State       `json:"state"`
	Resolution *ledger.Resolution `json:"resolution"`
	Error      string             `json:"error"`
}

// post sends body to the callback with token ("": none) and decodes the
// JSON answer.
func (a *apiRig) post(t *testing.T, method, token, body string) (int, apiAnswer) {
	t.Helper()
	req, err := http.NewRequest(method, a.api.URL+console.ReconcilePath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s = %v", method, console.ReconcilePath, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var ans apiAnswer
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q; want application/json", method, body, ct)
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		t.Fatalf("%s %s: the answer %q is not JSON: %v", method, body, b, err)
	}
	return resp.StatusCode, ans
}

func TestReconcileAPI(t *testing.T) {
	a := newAPIRig(t)
	a.unknownOf(t, "default", ledger.LayerProxy, "r-found")
	a.unknownOf(t, "default", ledger.LayerProxy, "r-failed")
	a.unknownOf(t, "default", "", "r-notrun")
	a.unknownOf(t, "t2", ledger.LayerProxy, "r-t2")
	a.unknownOf(t, "default", ledger.LayerClient, "r-two")
	a.unknownOf(t, "default", ledger.LayerServer, "r-two")
	a.succeededIn(t, ledger.LayerProxy, "r-done", "refund 7 done")

	const paid = `{"content":[{"type":"text","text":"refund rf-9 paid"}],"structuredContent":{"refund":"rf-9"}}`
	for _, c := range []struct {
		name, method, token, body string
		want                      int
		state                     ledger.State // of the answer, when set
		says                      string       // in the answer's error
	}{
		{"no token", "POST", "", `{"tool":"refund","key":"r-found","outcome":"succeeded","evidence":"row 9"}`, 401, "", "Bearer"},
		{"wrong token", "POST", "not-a-reconciler-token-at-all", `{"tool":"refund","key":"r-found","outcome":"succeeded","evidence":"row 9"}`, 401, "", "--reconcilers"},
		{"the console's own token", "POST", a.con.Token(), `{"tool":"refund","key":"r-found","outcome":"succeeded","evidence":"row 9"}`, 401, "", "reconciler token"},
		{"another tenant's record", "POST", payToken, `{"tool":"refund","key":"r-t2","outcome":"succeeded","evidence":"row 9"}`, 404, "", "tenant default"},
		{"another tenant named", "POST", payToken, `{"tenant":"t2","tool":"refund","key":"r-t2","outcome":"succeeded","evidence":"row 9"}`, 404, "", "reaches no record of tenant t2"},
		{"a wrong key", "POST", payToken, `{"tool":"refund","key":"r-nosuch","outcome":"succeeded","evidence":"row 9"}`, 404, "", "no record r-nosuch"},
		{"a wrong layer", "POST", payToken, `{"layer":"server","tool":"refund","key":"r-found","outcome":"succeeded","evidence":"row 9"}`, 404, "", "layer server"},
		{"malformed JSON", "POST", payToken, `{"tool":"refund","key":`, 400, "", "not a report"},
		{"an unknown field", "POST", payToken, `{"tool":"refund","key":"r-found","outcome":"succeeded","evidence":"row 9","as":"x"}`, 400, "", "unknown field"},
		{"two values", "POST", payToken, `{"tool":"refund","key":"r-found","outcome":"succeeded","evidence":"row 9"} {}`, 400, "", "one report per request"},
		{"a bad outcome", "POST", payToken, `{"tool":"refund","key":"r-found","outcome":"unknown","evidence":"row 9"}`, 400, "", "want succeeded, failed or not_run"},
		{"no evidence", "POST", payToken, `{"tool":"refund","key":"r-found","outcome":"succeeded"}`, 400, "", "evidence"},
		{"a bad key", "POST", payToken, `{"tool":"refund","key":"a b","outcome":"succeeded","evidence":"row 9"}`, 400, "", "key"},
		{"a result that is no CallToolResult", "POST", payToken, `{"tool":"refund","key":"r-found","outcome":"succeeded","result":[1],"evidence":"row 9"}`, 400, "", "CallToolResult"},
		{"an error result for succeeded", "POST", payToken, `{"tool":"refund","key":"r-found","outcome":"succeeded","result":{"content":[],"isError":true},"evidence":"row 9"}`, 400, "", "isError"},
		{"a result for not_run", "POST", payToken, `{"tool":"refund","key":"r-notrun","outcome":"not_run","result":{"content":[]},"evidence":"no row"}`, 400, "", "no result"},
		{"several tenants, none named", "POST", otherToken, `{"tool":"refund","key":"r-found","outcome":"succeeded","evidence":"row 9"}`, 400, "", "name the record's"},
		{"UNKNOWN in two layers", "POST", payToken, `{"tool":"refund","key":"r-two","outcome":"succeeded","evidence":"row 9"}`, 400, "", "layer client and layer server"},
		{"a settled record", "POST", payToken, `{"tool":"refund","key":"r-done","outcome":"failed","evidence":"row 9"}`, 409, ledger.StateSucceeded, "not UNKNOWN"},
		{"GET", "GET", payToken, ``, 405, "", "POST"},
		{"found", "POST", payToken, `{"tool":"refund","key":"r-found","outcome":"succeeded","result":` + paid + `,"evidence":"refunds table row 9 (key r-found)"}`, 200, ledger.StateSucceeded, ""},
		{"found again", "POST", payToken, `{"tool":"refund","key":"r-found","outcome":"succeeded","result":` + paid + `,"evidence":"refunds table row 9 (key r-found)"}`, 409, ledger.StateSucceeded, "settled already"},
		{"failed, no result", "POST", payToken, `{"layer":"proxy","tool":"refund","key":"r-failed","outcome":"failed","evidence":"declined by the bank"}`, 200, ledger.StateFailed, ""},
		{"not_run", "POST", payToken, `{"tool":"refund","key":"r-notrun","outcome":"not_run","evidence":"no row with key r-notrun after the deadline"}`, 200, ledger.StateRetryable, ""},
		{"another tenant, named, by its token", "POST", otherToken, `{"tenant":"t2","tool":"refund","key":"r-t2","outcome":"succeeded","evidence":"ledger entry 4"}`, 200, ledger.StateSucceeded, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, ans := a.post(t, c.method, c.token, c.body)
			if code != c.want || ans.State != c.state || !strings.Contains(ans.Error, c.says) {
				t.Fatalf("%s %s = %d %+v; want %d, state %q, error saying %q", c.method, c.body, code, ans, c.want, c.state, c.says)
			}
			if code == 200 && ans.Error != "" {
				t.Errorf("a settled report's answer has an error: %q", ans.Error)
			}
			if code != 200 && code != 409 && ans.State != "" {
				t.Errorf("a refused report's answer names a record: %+v", ans)
			}
		})
	}

	// What the report settled, as the ledger keeps it: the reporter's
	// result byte for byte, the token's name, the method and the evidence.
	rec := a.get(t, ledger.LayerProxy, "refund", "r-found")
	if rec.State != ledger.StateSucceeded || !bytes.Equal(rec.Result, []byte(paid)) {
		t.Errorf("r-found = %s %s; want SUCCEEDED with the reported result %s", rec.State, rec.Result, paid)
	}
	if r := rec.Reconciled; r == nil || r.Method != ledger.MethodCallback || r.By != "payments-db" || r.Verdict != ledger.VerdictFound ||
		r.Evidence != "refunds table row 9 (key r-found)" || r.At.IsZero() {
		t.Errorf("r-found reconciled = %+v; want found by callback payments-db with the evidence", rec.Reconciled)
	}
	if rec := a.get(t, ledger.LayerProxy, "refund", "r-failed"); rec.State != ledger.StateFailed || rec.Reconciled == nil || rec.Reconciled.Verdict != ledger.VerdictFailed {
		t.Errorf("r-failed = %s %+v; want FAILED, reconciled failed", rec.State, rec.Reconciled)
	}
	for _, layer := range []string{ledger.LayerClient, ledger.LayerServer} {
		if rec := a.get(t, layer, "refund", "r-two"); rec.State != ledger.StateUnknown {
			t.Errorf("r-two in layer %s = %s; an ambiguous report changed it", layer, rec.State)
		}
	}
	if rec := a.get(t, ledger.LayerProxy, "refund", "r-done"); rec.Result == nil || !strings.Contains(string(rec.Result), "refund 7 done") {
		t.Errorf("r-done result = %s; the 409 changed it", rec.Result)
	}

	// Each settled report counts once, by method callback.
	got := resolvedCounts(t, a.reader)
	want := map[string]int64{"callback SUCCEEDED": 2, "callback FAILED": 1, "callback RETRYABLE": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s{%s} = %d; want %d (all: %v)", telemetry.MetricUnknownResolved, k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s = %v; want %v", telemetry.MetricUnknownResolved, got, want)
	}
}

// A console without --reconcilers takes no report, and says how to.
func TestReconcileAPIOff(t *testing.T) {
	r := newRig(t)
	r.unknown(t, "r-1")
	req, err := http.NewRequest("POST", r.web.URL+console.ReconcilePath, strings.NewReader(`{"tool":"refund","key":"r-1","outcome":"succeeded","evidence":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.con.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 401 || !strings.Contains(string(b), "--reconcilers") {
		t.Errorf("a report to a console without reconcilers = %d %s; want 401 naming --reconcilers", resp.StatusCode, b)
	}
	if rec := r.get(t, "", "refund", "r-1"); rec.State != ledger.StateUnknown {
		t.Errorf("r-1 = %s; want UNKNOWN", rec.State)
	}
}

// A report's body is bounded: one past the bound is refused with 413 and
// changes nothing.
func TestReconcileAPIBodyBound(t *testing.T) {
	a := newAPIRig(t)
	a.unknownOf(t, "default", "", "r-big")
	big := `{"tool":"refund","key":"r-big","outcome":"succeeded","evidence":"row 9","result":{"content":[{"type":"text","text":"` +
		strings.Repeat("x", ledger.DefaultMaxResult+64<<10) + `"}]}}`
	code, ans := a.post(t, "POST", payToken, big)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(ans.Error, "bytes") {
		t.Errorf("a report of %d bytes = %d %+v; want 413", len(big), code, ans)
	}
	if rec := a.get(t, "", "refund", "r-big"); rec.State != ledger.StateUnknown {
		t.Errorf("r-big = %s; want UNKNOWN", rec.State)
	}
}

// Reports racing on one record: exactly one settles it, every other
// answers 409 with the state it settled to, and the counter counts one.
func TestReconcileAPIRace(t *testing.T) {
	a := newAPIRig(t)
	a.unknownOf(t, "default", "", "r-race")
	const n = 8
	var ok, conflict, other atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		outcome := []string{"succeeded", "failed", "not_run"}[i%3]
		wg.Go(func() {
			code, ans := a.post(t, "POST", payToken, `{"tool":"refund","key":"r-race","outcome":"`+outcome+`","evidence":"seen"}`)
			switch {
			case code == 200:
				ok.Add(1)
			case code == 409 && ans.State != ledger.StateUnknown && ans.State != "":
				conflict.Add(1)
			default:
				other.Add(1)
				t.Errorf("a racing report = %d %+v; want 200 or 409 with a settled state", code, ans)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || conflict.Load() != n-1 || other.Load() != 0 {
		t.Errorf("%d racing reports: %d settled, %d conflicts, %d other; want 1 and %d", n, ok.Load(), conflict.Load(), other.Load(), n-1)
	}
	var count int64
	for _, n := range resolvedCounts(t, a.reader) {
		count += n
	}
	if count != 1 {
		t.Errorf("%s = %d after one settled report; want 1", telemetry.MetricUnknownResolved, count)
	}
}

// resolvedCounts reads mcpledger.unknown.resolved from reader, by "method
// STATE", and checks that the resolution-time histogram saw as many.
func resolvedCounts(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var counted, timed int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case telemetry.MetricUnknownResolved:
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					method, _ := dp.Attributes.Value(telemetry.AttrResolutionMethod)
					state, _ := dp.Attributes.Value(telemetry.AttrState)
					got[method.AsString()+" "+state.AsString()] += dp.Value
					counted += dp.Value
				}
			case telemetry.MetricResolutionDuration:
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					timed += int64(dp.Count)
				}
			}
		}
	}
	if counted != timed {
		t.Errorf("%s counted %d resolutions, %s timed %d; want the same", telemetry.MetricUnknownResolved, counted, telemetry.MetricResolutionDuration, timed)
	}
	return got
}

// The console's own reconcile form counts as a person's resolution.
func TestReconcileFormCountsPerson(t *testing.T) {
	a := newAPIRig(t)
	a.unknownOf(t, "default", "", "r-person")
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	web := &http.Client{Jar: jar}
	resp, err := web.Get(a.api.URL + "/unknown?token=" + url.QueryEscape(a.con.Token()))
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("the unknown page has no form: %s", page)
	}
	form := url.Values{"csrf": {string(m[1])}, "tenant": {"default"}, "tool": {"refund"}, "key": {"r-person"}, "as": {"failed"}, "note": {"no refund at the bank"}}
	req, err := http.NewRequest("POST", a.api.URL+"/reconcile", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", a.api.URL)
	if resp, err = web.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if rec := a.get(t, "", "refund", "r-person"); rec.State != ledger.StateFailed || rec.Reconciled == nil || rec.Reconciled.Method != ledger.MethodPerson || rec.Reconciled.By != "ana" {
		t.Fatalf("r-person = %s %+v; want FAILED, reconciled by person ana", rec.State, rec.Reconciled)
	}
	if got := resolvedCounts(t, a.reader); got["person FAILED"] != 1 || len(got) != 1 {
		t.Errorf("%s = %v; want one person FAILED", telemetry.MetricUnknownResolved, got)
	}
}

// BenchmarkReconcileAPI is one report over HTTP on 127.0.0.1 settling one
// UNKNOWN record of a SQLite ledger.
func BenchmarkReconcileAPI(b *testing.B) {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	con, err := console.New(console.Options{Store: st, Tenant: "default", Reconcilers: []console.Reconciler{{Token: payToken, Name: "payments-db"}}})
	if err != nil {
		b.Fatal(err)
	}
	web := httptest.NewServer(con)
	b.Cleanup(web.Close)
	ctx := context.Background()
	for i := range b.N {
		id := ledger.ID{Tenant: "default", Tool: "refund", Key: fmt.Sprintf("r-%d", i)}
		cl, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "f", Owner: "gone"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "gone", Fence: cl.Record.Fence, ErrorKind: "ambiguous"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		req, err := http.NewRequest("POST", web.URL+console.ReconcilePath, strings.NewReader(fmt.Sprintf(`{"tool":"refund","key":"r-%d","outcome":"succeeded","evidence":"row %d"}`, i, i)))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+payToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("report %d = %d; want 200", i, resp.StatusCode)
		}
	}
}
