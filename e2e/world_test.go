package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/wire"
)

// Tenants of the two client-side ledgers; the payments server uses
// server.DefaultTenant in its own SQLite ledger.
const (
	agentTenant = "agent"
	proxyTenant = "proxy"
)

// Keys as each hop sends them on. Neither the proxy nor the payments
// server keeps keys per tenant, so the agent's tenant tags its keys for the
// proxy, and the proxy's tenant tags them again for the server
// (wire.TenantKey): the proxy's ledger and the server see these keys.
func proxyKey(k string) string  { return wire.TenantKey(agentTenant, k) }
func serverKey(k string) string { return wire.TenantKey(proxyTenant, proxyKey(k)) }

// world is the long-lived part of one half of the suite: the databases,
// the HTTP servers kept running across iterations, and what the checks
// read.
type world struct {
	t    *testing.T
	bin  binaries
	dir  string
	name string // "sqlite" or "postgres"

	// Ledgers: a SQLite path or a postgres:// URL each.
	agentLedger, proxyLedger string
	agentStore, proxyStore   ledger.Store
	serverStore              *sqlite.Store

	paymentsDB  string   // payments' own database; its ledger and downstream sit beside it
	sqliteFiles []string // every SQLite file, for integrity_check
	pay, down   *sql.DB  // read-only views for the checks
	policy      string

	// The HTTP servers: payments (also the dispatcher that drains the
	// outbox between iterations), and the proxies for HTTP agents, by
	// [write-behind][upstream over HTTP]: in front of a stdio payments
	// child or of payments' URL, writing outcomes durably or behind.
	payPort    int
	payHTTP    *proc
	proxyPorts [2][2]int
	proxies    [2][2]*proc

	// back is when the victim of the current iteration came back: the
	// restart of a server or proxy the suite runs began, or (a stdio
	// child, which its parent restarts on its next call) it was killed.
	back time.Time

	counts *counts
	// modes are the figures of the durable iterations ([0]) and the
	// write-behind ones ([1]); counts has them all.
	modes [2]*counts
}

func newWorld(t *testing.T, name, agentLedger, proxyLedger string, c *counts) *world {
	t.Helper()
	w := &world{t: t, bin: build(t), dir: t.TempDir(), name: name, counts: c,
		modes: [2]*counts{{}, {}}, agentLedger: agentLedger, proxyLedger: proxyLedger}
	ctx := context.Background()
	w.paymentsDB = filepath.Join(w.dir, "p.db")
	w.sqliteFiles = []string{w.paymentsDB, filepath.Join(w.dir, "p.ledger.db"), filepath.Join(w.dir, "p.downstream.db")}
	w.policy = filepath.Join(w.dir, "policy.json")
	if err := os.WriteFile(w.policy, []byte(`{"version": 1, "rules": [{"tool": "*", "action": "allow", "note": "the kill suite pays without asking"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	for _, l := range []struct {
		target string
		store  *ledger.Store
	}{{agentLedger, &w.agentStore}, {proxyLedger, &w.proxyStore}} {
		if postgres.IsURL(l.target) {
			*l.store, err = postgres.Open(ctx, l.target, nil)
		} else {
			w.sqliteFiles = append(w.sqliteFiles, l.target)
			*l.store, err = sqlite.Open(ctx, l.target, nil)
		}
		if err != nil {
			t.Fatalf("open ledger: %v", err)
		}
		st := *l.store
		t.Cleanup(func() { st.Close() })
	}

	w.payPort = freePort(t)
	for wb := range w.proxyPorts {
		for up := range w.proxyPorts[wb] {
			w.proxyPorts[wb][up] = freePort(t)
		}
	}
	w.startPayments("")
	// payments created its databases; the checks read them from here on.
	if w.serverStore, err = sqlite.Open(ctx, w.sqliteFiles[1], nil); err != nil {
		t.Fatalf("open the payments ledger: %v", err)
	}
	t.Cleanup(func() { w.serverStore.Close() })
	w.pay, w.down = openDB(t, w.sqliteFiles[0]), openDB(t, w.sqliteFiles[2])
	t.Cleanup(w.stopAll)
	return w
}

func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// paymentsArgs runs payments on the world's databases with short leases,
// so a killed handler's record turns UNKNOWN and a killed delivery is
// retried within a second.
func (w *world) paymentsArgs() []string {
	return []string{w.bin.payments, "-db", w.paymentsDB, "-lease", "500ms", "-delivery-lease", "500ms", "-wait", "2s"}
}

func (w *world) paymentsURL() string { return fmt.Sprintf("http://127.0.0.1:%d/", w.payPort) }

// startPayments (re)starts the HTTP payments server on its port, with
// fault armed when not empty.
func (w *world) startPayments(fault string) {
	w.t.Helper()
	argv := append(w.paymentsArgs(), "-http", fmt.Sprintf("127.0.0.1:%d", w.payPort))
	w.payHTTP = start(w.t, "payments", []string{"PAYMENTS_FAULT=" + fault}, argv...)
	w.ready(w.payHTTP, "listening on")
}

// ready waits for a server's "listening" line.
func (w *world) ready(p *proc, line string) {
	w.t.Helper()
	if _, ok := p.log.waitLine(line, 30*time.Second, p.done); !ok {
		p.stop()
		w.t.Fatalf("%s did not start: no %q line; output:\n%s", p.name, line, p.log)
	}
}

// proxyArgs is agentctl proxy in front of payments: over stdio (a child
// per host session) or, with url, over HTTP. listen serves the host over
// HTTP when not empty. p's durability is the proxy's.
func (w *world) proxyArgs(p plan, listen, url string) []string {
	argv := []string{w.bin.agentctl, "--ledger", w.proxyLedger, "--tenant", proxyTenant, "proxy", "--policy", w.policy,
		"--durability", p.durability()}
	if listen != "" {
		argv = append(argv, "--listen", listen)
	}
	if url != "" {
		return append(argv, "--url", url)
	}
	return append(append(argv, "--"), w.paymentsArgs()...)
}

// proxySlot indexes the HTTP proxy of plan p in proxies and proxyPorts.
func proxySlot(p plan) (wb, up int) {
	if p.WriteBehind {
		wb = 1
	}
	if p.UpstreamHTTP {
		up = 1
	}
	return wb, up
}

// startProxy (re)starts the HTTP proxy of plan p.
func (w *world) startProxy(p plan) *proc {
	w.t.Helper()
	wb, up := proxySlot(p)
	url := ""
	if p.UpstreamHTTP {
		url = w.paymentsURL()
	}
	px := start(w.t, "proxy", nil, w.proxyArgs(p, fmt.Sprintf("127.0.0.1:%d", w.proxyPorts[wb][up]), url)...)
	w.ready(px, "listening on")
	w.proxies[wb][up] = px
	return px
}

// proxyFor returns the running HTTP proxy an HTTP agent of plan p uses,
// starting it when needed.
func (w *world) proxyFor(p plan) *proc {
	w.t.Helper()
	wb, up := proxySlot(p)
	if cur := w.proxies[wb][up]; cur != nil && !cur.exited() {
		return cur
	}
	return w.startProxy(p)
}

func (w *world) proxyEndpoint(p plan) string {
	wb, up := proxySlot(p)
	return fmt.Sprintf("http://127.0.0.1:%d/", w.proxyPorts[wb][up])
}

// startAgent runs the agent for keys, appending to journal.
func (w *world) startAgent(p plan, journal string, keys []string) *proc {
	w.t.Helper()
	argv := []string{w.bin.agent, "-ledger", w.agentLedger, "-tenant", agentTenant, "-journal", journal,
		"-keys", strings.Join(keys, ","), "-lease", "500ms", "-wait", "3s", "-retry-for", "20s", "-sdk", p.AgentSDK,
		"-durability", p.durability()}
	if p.AgentHTTP {
		w.proxyFor(p)
		argv = append(argv, "-url", w.proxyEndpoint(p))
	} else {
		url := ""
		if p.UpstreamHTTP {
			url = w.paymentsURL()
		}
		argv = append(append(argv, "--"), w.proxyArgs(p, "", url)...)
	}
	return start(w.t, "agent", nil, argv...)
}

func (w *world) stopAll() {
	// Proxies first: their stdio payments children end with them.
	for _, p := range []*proc{w.proxies[0][0], w.proxies[0][1], w.proxies[1][0], w.proxies[1][1], w.payHTTP} {
		if p != nil {
			p.stop()
		}
	}
}
