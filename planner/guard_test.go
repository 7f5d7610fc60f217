package planner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/planner"
)

const orderArgs = `{"sku":"A-1","qty":2}`

func query(t *testing.T, tool, args string) planner.Query {
	return planner.Query{Layer: ledger.LayerClient, Tenant: "acme", Session: "s1", Tool: tool, Fingerprint: fingerprint(t, args)}
}

func TestGuardDecisions(t *testing.T) {
	cases := []struct {
		state     ledger.State
		want      planner.Decision
		hasRecord bool
	}{
		{ledger.StateSucceeded, planner.Replay, true},
		{ledger.StateFailed, planner.Replay, true},
		{ledger.StateProcessing, planner.InFlight, true},
		{ledger.StatePendingApproval, planner.InFlight, true},
		{ledger.StateUnknown, planner.Unknown, true},
		{ledger.StateDenied, planner.Denied, true},
		// Never reached the tool: execute again, reusing the key.
		{ledger.StateRetryable, planner.Run, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.state), func(t *testing.T) {
			c := newClock()
			st := openStore(t, c)
			seed(t, st, call{tenant: "acme", session: "s1", tool: "create_order", key: "o-1", args: orderArgs, state: tc.state})
			c.Advance(time.Minute)
			g := &planner.Guard{Store: st, Now: c.Now}
			// Another spelling of the same arguments is the same call.
			q := query(t, "create_order", `{ "qty": 2.0, "sku": "A-1", "_meta": {"x": 1} }`)
			v, err := g.Check(context.Background(), q)
			if err != nil {
				t.Fatalf("Check(%+v) = %v", q, err)
			}
			if v.Decision != tc.want {
				t.Fatalf("Check(%s record) = %v; want %v", tc.state, v.Decision, tc.want)
			}
			if v.Record == nil || v.Record.Key != "o-1" || v.Record.State != tc.state {
				t.Fatalf("Check(%s record).Record = %+v; want the o-1 record", tc.state, v.Record)
			}
		})
	}
}

func TestGuardNoMatch(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	seed(t, st, call{tenant: "acme", session: "s1", tool: "create_order", key: "o-1", args: orderArgs})
	// Neighbours of the seeded call that must not match it.
	cases := []struct {
		name string
		q    planner.Query
	}{
		{name: "other arguments", q: query(t, "create_order", `{"sku":"A-1","qty":3}`)},
		{name: "other tool", q: query(t, "create_orders", orderArgs)},
		{name: "other session", q: planner.Query{Layer: ledger.LayerClient, Tenant: "acme", Session: "s2", Tool: "create_order", Fingerprint: fingerprint(t, orderArgs)}},
		{name: "no session", q: planner.Query{Layer: ledger.LayerClient, Tenant: "acme", Tool: "create_order", Fingerprint: fingerprint(t, orderArgs)}},
		{name: "other tenant", q: planner.Query{Layer: ledger.LayerClient, Tenant: "globex", Session: "s1", Tool: "create_order", Fingerprint: fingerprint(t, orderArgs)}},
	}
	g := &planner.Guard{Store: st, Now: c.Now}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := g.Check(context.Background(), tc.q)
			if err != nil || v.Decision != planner.Run || v.Record != nil {
				t.Fatalf("Check(%+v) = %v, %+v, %v; want New with no record", tc.q, v.Decision, v.Record, err)
			}
		})
	}
}

func TestGuardWindow(t *testing.T) {
	cases := []struct {
		name    string
		guard   planner.Guard
		tool    string
		elapsed time.Duration
		want    planner.Decision
	}{
		{name: "default window, inside", tool: "create_order", elapsed: 9*time.Minute + 59*time.Second, want: planner.Replay},
		{name: "default window, at the edge", tool: "create_order", elapsed: 10 * time.Minute, want: planner.Replay},
		{name: "default window, past", tool: "create_order", elapsed: 10*time.Minute + time.Second, want: planner.Run},
		{name: "custom window, inside", guard: planner.Guard{Window: time.Hour}, tool: "create_order", elapsed: 59 * time.Minute, want: planner.Replay},
		{name: "custom window, past", guard: planner.Guard{Window: time.Minute}, tool: "create_order", elapsed: 2 * time.Minute, want: planner.Run},
		{name: "per-tool window, inside", guard: planner.Guard{Tools: ledger.Tools{"send_mail": {Window: 2 * time.Hour}}}, tool: "send_mail", elapsed: 90 * time.Minute, want: planner.Replay},
		{name: "per-tool window does not widen others", guard: planner.Guard{Tools: ledger.Tools{"send_mail": {Window: 2 * time.Hour}}}, tool: "create_order", elapsed: 90 * time.Minute, want: planner.Run},
		{name: "per-tool window narrower than default", guard: planner.Guard{Tools: ledger.Tools{"create_order": {Window: 30 * time.Second}}}, tool: "create_order", elapsed: time.Minute, want: planner.Run},
		{name: "per-tool negative turns the guard off", guard: planner.Guard{Tools: ledger.Tools{"create_order": {Window: -1}}}, tool: "create_order", elapsed: 0, want: planner.Run},
		{name: "negative window turns the guard off", guard: planner.Guard{Window: -1}, tool: "create_order", elapsed: 0, want: planner.Run},
		{name: "per-tool window beats an off default", guard: planner.Guard{Window: -1, Tools: ledger.Tools{"send_mail": {Window: time.Minute}}}, tool: "send_mail", elapsed: 0, want: planner.Replay},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			st := openStore(t, c)
			seed(t, st, call{tenant: "acme", session: "s1", tool: tc.tool, key: "k-1", args: orderArgs})
			c.Advance(tc.elapsed)
			g := tc.guard
			g.Store, g.Now = st, c.Now
			v, err := g.Check(context.Background(), query(t, tc.tool, orderArgs))
			if err != nil {
				t.Fatalf("Check = %v", err)
			}
			if v.Decision != tc.want {
				t.Fatalf("Check(%s after %v) = %v; want %v", tc.tool, tc.elapsed, v.Decision, tc.want)
			}
		})
	}
}

func TestGuardNewestWins(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	seed(t, st, call{tenant: "acme", session: "s1", tool: "create_order", key: "first", args: orderArgs, state: ledger.StateSucceeded})
	c.Advance(time.Minute)
	// The caller asked for a second identical effect under a new key; it
	// is still running.
	seed(t, st, call{tenant: "acme", session: "s1", tool: "create_order", key: "second", args: orderArgs, state: ledger.StateProcessing})
	c.Advance(time.Minute)
	g := &planner.Guard{Store: st, Now: c.Now}
	v, err := g.Check(context.Background(), query(t, "create_order", orderArgs))
	if err != nil {
		t.Fatal(err)
	}
	if v.Decision != planner.InFlight || v.Record.Key != "second" {
		t.Fatalf("Check = %v %q; want InFlight on the newer key \"second\"", v.Decision, v.Record.Key)
	}
}

func TestGuardRetention(t *testing.T) {
	t.Run("expired record is no match", func(t *testing.T) {
		c := newClock()
		st := openStore(t, c)
		seed(t, st, call{tenant: "acme", session: "s1", tool: "create_order", key: "k", args: orderArgs, retention: time.Minute})
		c.Advance(2 * time.Minute)
		g := &planner.Guard{Store: st, Now: c.Now}
		v, err := g.Check(context.Background(), query(t, "create_order", orderArgs))
		if err != nil || v.Decision != planner.Run || v.Record != nil {
			t.Fatalf("Check = %v, %+v, %v; want New (reexecute policy frees the key)", v.Decision, v.Record, err)
		}
	})
	t.Run("tombstone leaves the session", func(t *testing.T) {
		// SQLite clears a tombstone's session, so the session-scoped guard
		// no longer sees it; the key's next Claim meets the tombstone.
		c := newClock()
		st := openStore(t, c)
		seed(t, st, call{tenant: "acme", session: "s1", tool: "pay", key: "k", args: orderArgs, retention: time.Minute, policy: ledger.Verify})
		c.Advance(2 * time.Minute)
		if n, err := st.Purge(context.Background(), ledger.PurgeRequest{ExpiredBy: c.Now()}); err != nil || n != 1 {
			t.Fatalf("Purge = %d, %v; want 1 tombstone", n, err)
		}
		g := &planner.Guard{Store: st, Now: c.Now}
		v, err := g.Check(context.Background(), query(t, "pay", orderArgs))
		if err != nil || v.Decision != planner.Run {
			t.Fatalf("Check = %v, %v; want New", v.Decision, err)
		}
	})
	t.Run("tombstone in the session is unknown", func(t *testing.T) {
		c := newClock()
		st := openStore(t, c)
		fp := fingerprint(t, orderArgs)
		tomb := &ledger.Record{
			ID:      ledger.ID{Layer: ledger.LayerClient, Tenant: "acme", Tool: "pay", Key: "k"},
			Session: "s1", Fingerprint: fp, State: ledger.StateSucceeded, Tombstone: true,
			CreatedAt: c.Now().Add(-time.Minute), ExpiresAt: c.Now().Add(-time.Second),
		}
		fake := recentStore{Store: st, find: func(ledger.RecentQuery) []*ledger.Record { return []*ledger.Record{tomb} }}
		g := &planner.Guard{Store: fake, Now: c.Now}
		v, err := g.Check(context.Background(), query(t, "pay", orderArgs))
		if err != nil {
			t.Fatal(err)
		}
		if v.Decision != planner.Unknown || v.Record != tomb {
			t.Fatalf("Check = %v, %+v; want Unknown on the tombstone", v.Decision, v.Record)
		}
		if txt := planner.Explain(v); !strings.Contains(txt, "person") || !strings.Contains(txt, "Do not issue") {
			t.Errorf("Explain(tombstone) = %q; want it to say a person decides", txt)
		}
	})
}

// recentStore is a Store whose FindRecent answers from find.
type recentStore struct {
	ledger.Store
	find func(ledger.RecentQuery) []*ledger.Record
}

func (s recentStore) FindRecent(_ context.Context, q ledger.RecentQuery) ([]*ledger.Record, error) {
	return s.find(q), nil
}

func TestGuardIgnoresForeignRecords(t *testing.T) {
	// A faulty Store that ignores the scope must still not hand another
	// tenant's or session's call to this one.
	c := newClock()
	st := openStore(t, c)
	fp := fingerprint(t, orderArgs)
	rec := func(tenant, session, tool, fp string) *ledger.Record {
		return &ledger.Record{
			ID: ledger.ID{Layer: ledger.LayerClient, Tenant: tenant, Tool: tool, Key: "k"}, Session: session, Fingerprint: fp,
			State: ledger.StateSucceeded, CreatedAt: c.Now(), ExpiresAt: c.Now().Add(time.Hour),
		}
	}
	fake := recentStore{Store: st, find: func(ledger.RecentQuery) []*ledger.Record {
		return []*ledger.Record{
			rec("globex", "s1", "pay", fp), rec("acme", "s2", "pay", fp),
			rec("acme", "s1", "refund", fp), rec("acme", "s1", "pay", "other"),
		}
	}}
	g := &planner.Guard{Store: fake, Now: c.Now}
	v, err := g.Check(context.Background(), query(t, "pay", orderArgs))
	if err != nil || v.Decision != planner.Run || v.Record != nil {
		t.Fatalf("Check = %v, %+v, %v; want New with no record", v.Decision, v.Record, err)
	}
}

func TestGuardErrors(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	cases := []struct {
		name string
		g    *planner.Guard
		q    planner.Query
	}{
		{name: "no store", g: &planner.Guard{}, q: query(t, "t", `{}`)},
		{name: "bad tenant", g: &planner.Guard{Store: st}, q: planner.Query{Layer: ledger.LayerClient, Tenant: "a/b", Session: "s", Tool: "t", Fingerprint: "f"}},
		{name: "no tool", g: &planner.Guard{Store: st}, q: planner.Query{Layer: ledger.LayerClient, Tenant: "acme", Session: "s", Fingerprint: "f"}},
		{name: "no fingerprint", g: &planner.Guard{Store: st}, q: planner.Query{Layer: ledger.LayerClient, Tenant: "acme", Session: "s", Tool: "t"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tc.g.Check(context.Background(), tc.q)
			if err == nil {
				t.Fatalf("Check(%+v) = %v, nil; want an error", tc.q, v.Decision)
			}
			if !strings.HasPrefix(err.Error(), "planner: ") {
				t.Errorf("Check error = %q; want the package prefix", err)
			}
		})
	}
}

func TestGuardStoreFailure(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	g := &planner.Guard{Store: st, Now: c.Now}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v, err := g.Check(ctx, query(t, "t", `{}`)); err == nil {
		t.Fatalf("Check(cancelled ctx) = %v, nil; want the store's error", v.Decision)
	}
}

func TestDecisionString(t *testing.T) {
	cases := map[planner.Decision]string{
		planner.Run: "run", planner.Replay: "replay", planner.InFlight: "in_flight",
		planner.Unknown: "unknown", planner.Denied: "denied", planner.Decision(99): "Decision(99)",
	}
	for d, want := range cases {
		if got := d.String(); got != want {
			t.Errorf("Decision(%d).String() = %q; want %q", int(d), got, want)
		}
	}
}
