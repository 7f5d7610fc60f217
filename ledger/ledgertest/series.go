package ledgertest

import (
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// testEventSeries checks ledger.EventSeries, when the store has it: events
// counted in their interval by tool and outcome, duplicates among them,
// latency classes, the period's bounds, another tenant and a side left out.
func testEventSeries(t *testing.T, e *env, el ledger.EventLog) {
	es, ok := el.(ledger.EventSeries)
	if !ok {
		t.Skipf("%T has no ledger.EventSeries", el)
	}
	start := e.clock.Now().Truncate(time.Minute)
	at := func(minute int, sec int) time.Time {
		return start.Add(time.Duration(minute)*time.Minute + time.Duration(sec)*time.Second)
	}
	ev := func(minute, sec int, toolName string, o ledger.Outcome, dup bool, lat time.Duration) ledger.Event {
		return ledger.Event{Tenant: tenant, Tool: toolName, Side: ledger.SideClient, Outcome: o, Duplicate: dup, Latency: lat, At: at(minute, sec)}
	}
	e.appendEvents(el,
		ev(0, 0, "pay", ledger.OutcomeSucceeded, false, 3*time.Millisecond),
		ev(0, 59, "pay", ledger.OutcomeReplayed, true, 200*time.Microsecond),
		ev(0, 30, "refund", ledger.OutcomeSucceeded, false, 3*time.Millisecond),
		ev(2, 10, "pay", ledger.OutcomeReplayed, true, 200*time.Microsecond),
		ev(2, 11, "pay", ledger.OutcomeReplayed, true, 2*time.Minute),
		ev(3, 0, "pay", ledger.OutcomeSucceeded, false, time.Millisecond),   // at the end: outside
		ev(-1, 59, "pay", ledger.OutcomeSucceeded, false, time.Millisecond), // before: outside
		ledger.Event{Tenant: "other", Tool: "pay", Side: ledger.SideClient, Outcome: ledger.OutcomeSucceeded, At: at(1, 0)},
		ledger.Event{Tenant: tenant, Tool: "pay", Side: ledger.SideServer, Outcome: ledger.OutcomeSucceeded, At: at(1, 0)},
	)
	q := ledger.SeriesQuery{Tenant: tenant, Since: start, Step: time.Minute, Buckets: 3, Side: ledger.SideClient}
	s, err := es.Series(e.ctx, q)
	if err != nil {
		t.Fatalf("Series(%+v) = %v; want nil", q, err)
	}
	type key struct {
		b    int
		tool string
		o    ledger.Outcome
	}
	got := map[key][2]int64{}
	for _, c := range s.Counts {
		got[key{c.Bucket, c.Tool, c.Outcome}] = [2]int64{c.Calls, c.Duplicates}
	}
	want := map[key][2]int64{
		{0, "pay", ledger.OutcomeSucceeded}:    {1, 0},
		{0, "pay", ledger.OutcomeReplayed}:     {1, 1},
		{0, "refund", ledger.OutcomeSucceeded}: {1, 0},
		{2, "pay", ledger.OutcomeReplayed}:     {2, 2},
	}
	if len(got) != len(want) {
		t.Errorf("Series counts = %v; want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("Series counts %+v = %v; want %v (calls, duplicates)", k, got[k], w)
		}
	}
	lat := map[[2]int]int64{}
	for _, l := range s.Latency {
		lat[[2]int{l.Bucket, l.Class}] = l.Calls
	}
	wantLat := map[[2]int]int64{
		{0, ledger.LatencyClass(3 * time.Millisecond)}:   2,
		{0, ledger.LatencyClass(200 * time.Microsecond)}: 1,
		{2, ledger.LatencyClass(200 * time.Microsecond)}: 1,
		{2, len(ledger.LatencyBounds)}:                   1,
	}
	if len(lat) != len(wantLat) {
		t.Errorf("Series latency = %v; want %v", lat, wantLat)
	}
	for k, w := range wantLat {
		if lat[k] != w {
			t.Errorf("Series latency (interval %d, class %d) = %d; want %d", k[0], k[1], lat[k], w)
		}
	}
	q.Side = ""
	if s, err = es.Series(e.ctx, q); err != nil {
		t.Fatalf("Series(both sides) = %v", err)
	}
	var calls int64
	for _, c := range s.Counts {
		calls += c.Calls
	}
	if calls != 6 {
		t.Errorf("Series(both sides) counts %d calls; want 6", calls)
	}
	for _, bad := range []ledger.SeriesQuery{
		{Tenant: tenant, Since: start, Step: time.Minute, Buckets: 0},
		{Tenant: tenant, Since: start, Step: time.Millisecond, Buckets: 3},
		{Tenant: tenant, Since: start, Step: time.Minute, Buckets: ledger.MaxSeriesBuckets + 1},
		{Tenant: "", Since: start, Step: time.Minute, Buckets: 3},
	} {
		if _, err := es.Series(e.ctx, bad); err == nil {
			t.Errorf("Series(%+v) = nil error; want one", bad)
		}
	}
}
