package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// A client and a server guard on one ledger file: each keeps its own
// record of the key, so the server never takes the client's PROCESSING
// record for a running duplicate. The call pays once and answers at once;
// ledger list and show tell the two records apart by layer.
func TestLayersClientAndServerShareALedger(t *testing.T) {
	e := newE2E(t)
	shared := e.ledgerPath()
	server := shellJoin([]string{e.payments, "-db", e.payDB, "-ledger", shared})
	first := e.run(nil, append([]string{"call", "--server", server, "--yes", "--key", "lay-1"}, pay...)...)
	// Before layers the server waited out its in-progress bound on the
	// client's own record (29 s) and the call ended UNKNOWN (exit 4).
	first.wantExit(t, exitOK)
	if n := e.paymentsFor("lay-1"); n != 1 {
		t.Fatalf("payments for lay-1 = %d; want 1", n)
	}
	again := e.run(nil, append([]string{"call", "--server", server, "--yes", "--key", "lay-1"}, pay...)...)
	again.wantExit(t, exitOK)
	if n := e.paymentsFor("lay-1"); n != 1 {
		t.Errorf("payments for lay-1 after a repeat = %d; want 1 (a replay)", n)
	}

	show := e.run(nil, "--json", "ledger", "show", "lay-1")
	show.wantExit(t, exitOK)
	recs := jsonLines[ledger.Record](t, show.stdout)
	var layers []string
	for _, r := range recs {
		layers = append(layers, r.Layer)
		if r.State != ledger.StateSucceeded {
			t.Errorf("the %s layer's record of lay-1 is %s; want SUCCEEDED", r.Layer, r.State)
		}
	}
	slices.Sort(layers)
	if !slices.Equal(layers, []string{ledger.LayerClient, ledger.LayerServer}) {
		t.Fatalf("ledger show lay-1 on the shared ledger = layers %v; want client and server", layers)
	}
	text := e.run(nil, "ledger", "show", "lay-1")
	text.wantExit(t, exitOK)
	if strings.Count(text.stdout, "SUCCEEDED") != 2 || !strings.Contains(text.stdout, "server") {
		t.Errorf("ledger show lay-1 does not show both layers' records:\n%s", text.stdout)
	}

	list := e.run(nil, "ledger", "list", "--layer", "server")
	list.wantExit(t, exitOK)
	rows := strings.Split(strings.TrimSpace(list.stdout), "\n")
	if !strings.Contains(rows[0], "LAYER") || len(rows) != 2 || strings.Fields(rows[1])[1] != ledger.LayerServer {
		t.Errorf("ledger list --layer server = %q; want the header and the server's one record", list.stdout)
	}
	e.run(nil, "ledger", "reconcile", "lay-1", "--as", "succeeded", "--layer", "server").wantExit(t, exitUsage, "only UNKNOWN")
	e.run(nil, "ledger", "list", "--layer", "no such").wantExit(t, exitUsage, "--layer", "client, proxy and server")
}

// agentctl call and agentctl proxy on one default ledger: the proxy's
// records are its own layer's, so the call through it neither waits on the
// client's record nor is mistaken for it.
func TestLayersCallThroughAProxyOnTheSameLedger(t *testing.T) {
	e := newE2E(t)
	policy := filepath.Join(e.dir, "allow.json")
	if err := os.WriteFile(policy, []byte(`{"version":1,"rules":[{"tool":"create_payment","action":"allow","note":"test"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	url := listeningProxy(t, e.env, "--policy", policy, "--", e.payments, "-db", e.payDB)
	// A wait on the other layer's record would end in_progress or UNKNOWN,
	// not exit 0.
	for _, key := range []string{"lp-1", "lp-1", "lp-2"} {
		e.run(nil, append([]string{"call", "--url", url, "--yes", "--key", key}, pay...)...).wantExit(t, exitOK)
	}
	for _, key := range []string{"lp-1", "lp-2"} {
		if n := e.paymentsFor(key); n != 1 {
			t.Errorf("payments for %s = %d; want 1", key, n)
		}
	}
	o := e.run(nil, "--json", "ledger", "list", "--layer", "proxy")
	o.wantExit(t, exitOK)
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(o.stdout), "\n") {
		var r ledger.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("ledger list --json line %q: %v", line, err)
		}
		if r.Layer != ledger.LayerProxy || r.State != ledger.StateSucceeded {
			t.Errorf("ledger list --layer proxy: %s in layer %q is %s", r.Key, r.Layer, r.State)
		}
		keys = append(keys, r.Key)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"lp-1", "lp-2"}) {
		t.Errorf("the proxy layer's keys = %v; want lp-1 and lp-2", keys)
	}
	if r := e.record("lp-1"); r.State != ledger.StateSucceeded {
		t.Errorf("the client layer's record of lp-1 = %s; want SUCCEEDED", r.State)
	}
}

// The same on one PostgreSQL database, the way a deployment shares one:
// agentctl call and the payments server's guard on one schema.
func TestLayersShareAPostgresLedger(t *testing.T) {
	url := pgtest.Schema(t)
	e := newE2E(t)
	e.env = append(e.env, "MCPLEDGER_LEDGER="+url)
	server := shellJoin([]string{e.payments, "-db", e.payDB, "-ledger", url})
	// A wait on the client's record would end the call UNKNOWN, not exit 0.
	e.run(nil, append([]string{"call", "--server", server, "--yes", "--key", "lay-pg"}, pay...)...).wantExit(t, exitOK)
	e.run(nil, append([]string{"call", "--server", server, "--yes", "--key", "lay-pg"}, pay...)...).wantExit(t, exitOK)
	if n := e.paymentsFor("lay-pg"); n != 1 {
		t.Fatalf("payments for lay-pg = %d; want 1", n)
	}
	o := e.run(nil, "--json", "ledger", "show", "lay-pg")
	o.wantExit(t, exitOK)
	var layers []string
	for _, r := range jsonLines[ledger.Record](t, o.stdout) {
		if r.State != ledger.StateSucceeded {
			t.Errorf("the %s layer's record is %s; want SUCCEEDED", r.Layer, r.State)
		}
		layers = append(layers, r.Layer)
	}
	slices.Sort(layers)
	if !slices.Equal(layers, []string{ledger.LayerClient, ledger.LayerServer}) {
		t.Errorf("ledger show lay-pg = layers %v; want client and server", layers)
	}
}
