package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// seedEvents stores the call events of a day's work and one older replay,
// as clients and servers would have written them.
func seedEvents(t *testing.T, path string, now time.Time) {
	t.Helper()
	ev := func(side ledger.Side, o ledger.Outcome, latency time.Duration, waited bool, age time.Duration) ledger.Event {
		dup := o == ledger.OutcomeReplayed || o == ledger.OutcomeInProgress
		return ledger.Event{Tenant: "default", Tool: "create_payment", Side: side, Outcome: o,
			Duplicate: dup, Waited: waited, Latency: latency, At: now.Add(-age), Attempts: 1}
	}
	const recent, old = time.Hour, 48 * time.Hour
	events := []ledger.Event{
		ev(ledger.SideClient, ledger.OutcomeSucceeded, 30*time.Millisecond, false, recent),
		ev(ledger.SideClient, ledger.OutcomeSucceeded, 40*time.Millisecond, false, recent),
		ev(ledger.SideClient, ledger.OutcomeReplayed, 2*time.Millisecond, false, recent),
		ev(ledger.SideClient, ledger.OutcomeReplayed, 4*time.Millisecond, false, recent),
		ev(ledger.SideClient, ledger.OutcomeKeyConflict, time.Millisecond, false, recent),
		ev(ledger.SideClient, ledger.OutcomeInProgress, 30*time.Second, true, recent),
		ev(ledger.SideClient, ledger.OutcomeReplayed, 6*time.Millisecond, true, recent),
		ev(ledger.SideServer, ledger.OutcomeSucceeded, 20*time.Millisecond, false, recent),
		ev(ledger.SideServer, ledger.OutcomeReplayed, time.Millisecond, false, recent),
		ev(ledger.SideServer, ledger.OutcomeInProgress, 5*time.Second, true, recent),
		ev(ledger.SideClient, ledger.OutcomeReplayed, time.Second, false, old),
	}
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("sqlite.Open(%q) = %v", path, err)
	}
	defer st.Close()
	if err := st.AppendEvents(context.Background(), events); err != nil {
		t.Fatalf("AppendEvents = %v", err)
	}
}

func TestLedgerStats(t *testing.T) {
	path, env := ledgerEnv(t)
	now := time.Now()
	seedEvents(t, path, now)
	seedLedger(t, path, now, seedRecord{tool: "create_payment", key: "order-new", state: ledger.StateUnknown},
		seedRecord{tool: "create_payment", key: "order-done", state: ledger.StateSucceeded, result: okResult})
	seedLedger(t, path, now.Add(-48*time.Hour), seedRecord{tool: "create_payment", key: "order-old", state: ledger.StateUnknown})

	cases := []struct {
		name string
		args []string
		want statsOutput
	}{
		{"last day, both sides", nil, statsOutput{
			Calls: 10, DuplicateHits: 4, DuplicateHitRate: 0.4, KeyConflicts: 1, KeyConflictRate: 0.1,
			InProgressWaits: 3, InProgressTimeouts: 2, Unknown: 1, DownstreamDuplicates: 2,
			ReplayP50Seconds: 0.002, ReplayP99Seconds: 0.006,
		}},
		{"a week", []string{"--since", "7d"}, statsOutput{
			Calls: 11, DuplicateHits: 5, DuplicateHitRate: 5.0 / 11, KeyConflicts: 1, KeyConflictRate: 1.0 / 11,
			InProgressWaits: 3, InProgressTimeouts: 2, Unknown: 2, DownstreamDuplicates: 2,
			ReplayP50Seconds: 0.004, ReplayP99Seconds: 1,
		}},
		{"server side", []string{"--side", "server"}, statsOutput{
			Side: "server", Calls: 3, DuplicateHits: 1, DuplicateHitRate: 1.0 / 3,
			InProgressWaits: 1, InProgressTimeouts: 1, Unknown: 1, DownstreamDuplicates: 2,
			ReplayP50Seconds: 0.001, ReplayP99Seconds: 0.001,
		}},
		{"an empty period", []string{"--since", "1ms"}, statsOutput{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := inProcess(t, env, nil, append([]string{"--json", "ledger", "stats"}, tc.args...)...)
			o.wantExit(t, exitOK)
			got := jsonLines[statsOutput](t, o.stdout)
			if len(got) != 1 {
				t.Fatalf("ledger stats --json printed %d objects; want 1", len(got))
			}
			g := got[0]
			if g.Tenant != "default" || g.Since.IsZero() || g.Since.After(time.Now()) {
				t.Errorf("tenant %q since %v; want default and a time in the past", g.Tenant, g.Since)
			}
			g.Tenant, g.Since = "", time.Time{}
			if g != tc.want {
				t.Errorf("ledger stats %v =\n%+v; want\n%+v", tc.args, g, tc.want)
			}
		})
	}
}

func TestLedgerStatsTable(t *testing.T) {
	path, env := ledgerEnv(t)
	seedEvents(t, path, time.Now())
	o := inProcess(t, env, nil, "ledger", "stats")
	o.wantExit(t, exitOK)
	lines := strings.Split(strings.TrimRight(o.stdout, "\n"), "\n")
	if len(lines) != 11 || !strings.HasPrefix(lines[0], "FIGURE") {
		t.Fatalf("ledger stats printed %d lines starting %q; want a header and 10 rows:\n%s", len(lines), lines[0], o.stdout)
	}
	col := strings.Index(lines[0], "VALUE")
	want := map[string]string{
		"calls":                          "10",
		"duplicate hit rate":             "40.00% (4)",
		"key conflict rate":              "10.00% (1)",
		"in-progress waits":              "3",
		"in-progress timeouts":           "2",
		"UNKNOWN records":                "0",
		"downstream duplicates rejected": "2",
		"replay latency p50":             "2ms",
		"replay latency p99":             "6ms",
	}
	for _, l := range lines[1:] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("row %q: its value does not start at column %d, under VALUE", l, col)
			continue
		}
		name, value := strings.TrimSpace(l[:col]), l[col:]
		if name == "period" {
			if !strings.HasPrefix(value, "last 1d, since ") {
				t.Errorf("period = %q; want last 1d, since ...", value)
			}
			continue
		}
		if w, ok := want[name]; !ok || value != w {
			t.Errorf("row %q = %q; want %q", name, value, w)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("no row %q", name)
	}
}

func TestLedgerStatsUsage(t *testing.T) {
	path, env := ledgerEnv(t)
	seedEvents(t, path, time.Now())
	cases := []struct {
		name string
		args []string
		hint string
	}{
		{"since is not a duration", []string{"--since", "yesterday"}, "--since"},
		{"since is negative", []string{"--since", "-1h"}, "--since"},
		{"since in days is not a number", []string{"--since", "xd"}, "--since"},
		{"unknown side", []string{"--side", "proxy"}, "--side"},
		{"an argument", []string{"extra"}, "no arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := inProcess(t, env, nil, append([]string{"ledger", "stats"}, tc.args...)...)
			o.wantExit(t, exitUsage, tc.hint)
		})
	}
}

func TestLedgerStatsPostgres(t *testing.T) {
	url := pgtest.Schema(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatalf("postgres.Open = %v", err)
	}
	now := time.Now()
	events := []ledger.Event{
		{Tenant: "default", Tool: "create_payment", Side: ledger.SideClient, Outcome: ledger.OutcomeSucceeded, At: now},
		{Tenant: "default", Tool: "create_payment", Side: ledger.SideClient, Outcome: ledger.OutcomeReplayed, Latency: 3 * time.Millisecond, Duplicate: true, At: now},
		{Tenant: "default", Tool: "create_payment", Side: ledger.SideServer, Outcome: ledger.OutcomeReplayed, Latency: time.Millisecond, Duplicate: true, At: now},
		{Tenant: "default", Tool: "create_payment", Side: ledger.SideServer, Outcome: ledger.OutcomeKeyConflict, At: now},
	}
	if err := st.AppendEvents(ctx, events); err != nil {
		t.Fatalf("AppendEvents = %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	o := inProcess(t, map[string]string{"MCPLEDGER_LEDGER": url}, nil, "--json", "ledger", "stats")
	o.wantExit(t, exitOK)
	got := jsonLines[statsOutput](t, o.stdout)
	want := statsOutput{Calls: 4, DuplicateHits: 2, DuplicateHitRate: 0.5, KeyConflicts: 1, KeyConflictRate: 0.25,
		DownstreamDuplicates: 1, ReplayP50Seconds: 0.001, ReplayP99Seconds: 0.003}
	if len(got) != 1 {
		t.Fatalf("ledger stats printed %d objects; want 1", len(got))
	}
	g := got[0]
	g.Tenant, g.Since = "", time.Time{}
	if g != want {
		t.Fatalf("ledger stats on PostgreSQL =\n%+v; want\n%+v", g, want)
	}
}
