package ledgertest

import (
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// RunEventLog runs the conformance suite of ledger.EventLog against stores
// made by newStore, which must implement it. A Store that keeps events
// calls it beside Run:
//
//	ledgertest.RunEventLog(t, newStore)
func RunEventLog(t *testing.T, newStore NewStore) {
	t.Helper()
	groups := []struct {
		name string
		run  func(*testing.T, *env, ledger.EventLog)
	}{
		{"Counts", testEventCounts},
		{"Period", testEventPeriod},
		{"Percentiles", testEventPercentiles},
		{"Unknown", testEventUnknown},
		{"Purge", testEventPurge},
		{"Invalid", testEventInvalid},
		{"Series", testEventSeries},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			e := newEnv(t, newStore)
			el, ok := e.st.(ledger.EventLog)
			if !ok {
				t.Fatalf("%T does not implement ledger.EventLog", e.st)
			}
			g.run(t, e, el)
		})
	}
}

// ev is an event of the suite's tenant and tool at the clock's time.
func (e *env) ev(side ledger.Side, o ledger.Outcome) ledger.Event {
	return ledger.Event{Tenant: tenant, Tool: tool, Side: side, Outcome: o, At: e.clock.Now()}
}

func (e *env) appendEvents(el ledger.EventLog, events ...ledger.Event) {
	e.t.Helper()
	if err := el.AppendEvents(e.ctx, events); err != nil {
		e.t.Fatalf("AppendEvents(%d events) = %v; want nil", len(events), err)
	}
}

func (e *env) stats(el ledger.EventLog, q ledger.StatsQuery) ledger.Stats {
	e.t.Helper()
	st, err := el.Stats(e.ctx, q)
	if err != nil {
		e.t.Fatalf("Stats(%+v) = %v; want nil", q, err)
	}
	return st
}

func testEventCounts(t *testing.T, e *env, el ledger.EventLog) {
	if err := el.AppendEvents(e.ctx, nil); err != nil {
		t.Fatalf("AppendEvents(nil) = %v; want nil", err)
	}
	if got := e.stats(el, ledger.StatsQuery{Tenant: tenant}); got != (ledger.Stats{}) {
		t.Fatalf("Stats of an empty log = %+v; want zero", got)
	}
	waited := e.ev(ledger.SideClient, ledger.OutcomeReplayed)
	waited.Waited, waited.Duplicate, waited.Latency = true, true, 3*time.Millisecond
	timeout := e.ev(ledger.SideClient, ledger.OutcomeInProgress)
	timeout.Waited, timeout.Duplicate = true, true
	serverDup := e.ev(ledger.SideServer, ledger.OutcomeReplayed)
	serverDup.Duplicate, serverDup.Latency = true, time.Millisecond
	serverUnknownDup := e.ev(ledger.SideServer, ledger.OutcomeUnknown)
	serverUnknownDup.Duplicate = true
	other := e.ev(ledger.SideClient, ledger.OutcomeReplayed)
	other.Tenant = "tenant-b"
	e.appendEvents(el,
		e.ev(ledger.SideClient, ledger.OutcomeSucceeded),
		e.ev(ledger.SideClient, ledger.OutcomeSucceeded),
		e.ev(ledger.SideClient, ledger.OutcomeKeyConflict),
		e.ev(ledger.SideServer, ledger.OutcomeKeyConflict),
		e.ev(ledger.SideServer, ledger.OutcomeSucceeded),
		waited, timeout, serverDup, serverUnknownDup, other,
	)
	cases := []struct {
		name string
		q    ledger.StatsQuery
		want ledger.Stats
	}{
		{"both sides", ledger.StatsQuery{Tenant: tenant}, ledger.Stats{
			Calls: 9, DuplicateHits: 2, KeyConflicts: 2, InProgressWaits: 2, InProgressTimeouts: 1,
			DownstreamDuplicates: 2, ReplayP50: time.Millisecond, ReplayP99: 3 * time.Millisecond,
		}},
		{"client", ledger.StatsQuery{Tenant: tenant, Side: ledger.SideClient}, ledger.Stats{
			Calls: 5, DuplicateHits: 1, KeyConflicts: 1, InProgressWaits: 2, InProgressTimeouts: 1,
			ReplayP50: 3 * time.Millisecond, ReplayP99: 3 * time.Millisecond,
		}},
		{"server", ledger.StatsQuery{Tenant: tenant, Side: ledger.SideServer}, ledger.Stats{
			Calls: 4, DuplicateHits: 1, KeyConflicts: 1, DownstreamDuplicates: 2,
			ReplayP50: time.Millisecond, ReplayP99: time.Millisecond,
		}},
		{"other tenant", ledger.StatsQuery{Tenant: "tenant-b"}, ledger.Stats{Calls: 1, DuplicateHits: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := e.sub(t).stats(el, c.q); got != c.want {
				t.Errorf("Stats(%+v) =\n%+v; want\n%+v", c.q, got, c.want)
			}
		})
	}
	st := e.stats(el, ledger.StatsQuery{Tenant: tenant})
	if got, want := st.DuplicateHitRate(), 2.0/9; got != want {
		t.Errorf("DuplicateHitRate() = %v; want %v", got, want)
	}
	if got, want := st.KeyConflictRate(), 2.0/9; got != want {
		t.Errorf("KeyConflictRate() = %v; want %v", got, want)
	}
}

func testEventPeriod(t *testing.T, e *env, el ledger.EventLog) {
	old := e.ev(ledger.SideClient, ledger.OutcomeReplayed)
	old.Latency = time.Second
	e.appendEvents(el, old)
	since := e.clock.Advance(time.Hour)
	recent := e.ev(ledger.SideClient, ledger.OutcomeReplayed)
	recent.Latency = time.Millisecond
	e.appendEvents(el, recent, e.ev(ledger.SideClient, ledger.OutcomeSucceeded))
	cases := []struct {
		name     string
		since    time.Time
		calls    int64
		p50, p99 time.Duration
	}{
		{"everything", time.Time{}, 3, time.Millisecond, time.Second},
		{"at the boundary", since, 2, time.Millisecond, time.Millisecond},
		{"after the last event", since.Add(time.Microsecond), 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := e.sub(t).stats(el, ledger.StatsQuery{Tenant: tenant, Since: c.since})
			if got.Calls != c.calls || got.ReplayP50 != c.p50 || got.ReplayP99 != c.p99 {
				t.Errorf("Stats(since %v) = %d calls, p50 %v, p99 %v; want %d, %v, %v",
					c.since, got.Calls, got.ReplayP50, got.ReplayP99, c.calls, c.p50, c.p99)
			}
		})
	}
}

func testEventPercentiles(t *testing.T, e *env, el ledger.EventLog) {
	cases := []struct {
		name      string
		latencies []time.Duration // in append order
		p50, p99  time.Duration
	}{
		{"one replay", []time.Duration{7 * time.Millisecond}, 7 * time.Millisecond, 7 * time.Millisecond},
		{"two replays", []time.Duration{9 * time.Millisecond, 2 * time.Millisecond}, 2 * time.Millisecond, 9 * time.Millisecond},
		{"one to a hundred", spread(100), 50 * time.Millisecond, 99 * time.Millisecond},
		{"one to a thousand", spread(1000), 500 * time.Millisecond, 990 * time.Millisecond},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Each case has its own tenant, so cases do not mix.
			ten := "pct-" + string(rune('a'+i))
			events := make([]ledger.Event, len(c.latencies))
			for j, l := range c.latencies {
				events[j] = e.ev(ledger.SideServer, ledger.OutcomeReplayed)
				events[j].Tenant, events[j].Latency = ten, l
			}
			e.sub(t).appendEvents(el, events...)
			got := e.sub(t).stats(el, ledger.StatsQuery{Tenant: ten})
			if got.DuplicateHits != int64(len(c.latencies)) || got.ReplayP50 != c.p50 || got.ReplayP99 != c.p99 {
				t.Errorf("Stats(%s) = %d hits, p50 %v, p99 %v; want %d, %v, %v",
					c.name, got.DuplicateHits, got.ReplayP50, got.ReplayP99, len(c.latencies), c.p50, c.p99)
			}
		})
	}
}

// spread returns 1..n milliseconds, largest first, so a store that forgets
// to sort is caught.
func spread(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(n-i) * time.Millisecond
	}
	return out
}

func testEventUnknown(t *testing.T, e *env, el ledger.EventLog) {
	before := e.clock.Now()
	e.reach("k-unknown-old", ledger.StateUnknown)
	since := e.clock.Advance(time.Hour)
	e.reach("k-unknown-new", ledger.StateUnknown)
	e.reach("k-succeeded", ledger.StateSucceeded)
	settled := e.reach("k-reconciled", ledger.StateUnknown)
	e.mustTransition(ledger.Transition{ID: settled.ID, From: ledger.StateUnknown, To: ledger.StateSucceeded,
		Result: []byte(`{"content":[]}`)})
	cases := []struct {
		name string
		q    ledger.StatsQuery
		want int64
	}{
		{"whole history", ledger.StatsQuery{Tenant: tenant, Since: before}, 2},
		{"period", ledger.StatsQuery{Tenant: tenant, Since: since}, 1},
		{"other tenant", ledger.StatsQuery{Tenant: "tenant-b", Since: before}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := e.sub(t).stats(el, c.q).Unknown; got != c.want {
				t.Errorf("Stats(%+v).Unknown = %d; want %d", c.q, got, c.want)
			}
		})
	}
}

func testEventPurge(t *testing.T, e *env, el ledger.EventLog) {
	e.appendEvents(el, e.ev(ledger.SideClient, ledger.OutcomeSucceeded), e.ev(ledger.SideServer, ledger.OutcomeSucceeded))
	cut := e.clock.Advance(time.Hour)
	e.appendEvents(el, e.ev(ledger.SideClient, ledger.OutcomeReplayed))
	n, err := el.PurgeEvents(e.ctx, cut)
	if err != nil || n != 2 {
		t.Fatalf("PurgeEvents(cut) = %d, %v; want 2, nil", n, err)
	}
	if got := e.stats(el, ledger.StatsQuery{Tenant: tenant}); got.Calls != 1 || got.DuplicateHits != 1 {
		t.Fatalf("after PurgeEvents: %d calls, %d hits; want 1, 1", got.Calls, got.DuplicateHits)
	}
	if n, err := el.PurgeEvents(e.ctx, cut); err != nil || n != 0 {
		t.Fatalf("second PurgeEvents(cut) = %d, %v; want 0, nil", n, err)
	}
}

func testEventInvalid(t *testing.T, e *env, el ledger.EventLog) {
	good := e.ev(ledger.SideClient, ledger.OutcomeSucceeded)
	cases := []struct {
		name string
		edit func(*ledger.Event)
	}{
		{"bad tenant", func(ev *ledger.Event) { ev.Tenant = "no spaces" }},
		{"bad side", func(ev *ledger.Event) { ev.Side = "proxy" }},
		{"no tool", func(ev *ledger.Event) { ev.Tool = "" }},
		{"no outcome", func(ev *ledger.Event) { ev.Outcome = "" }},
		{"no time", func(ev *ledger.Event) { ev.At = time.Time{} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := good
			c.edit(&bad)
			if err := el.AppendEvents(e.ctx, []ledger.Event{good, bad}); err == nil {
				t.Errorf("AppendEvents(%s) = nil; want an error", c.name)
			}
		})
	}
	if got := e.stats(el, ledger.StatsQuery{Tenant: tenant}); got.Calls != 0 {
		t.Fatalf("after rejected batches Stats().Calls = %d; want 0 (a rejected batch stores nothing)", got.Calls)
	}
}
