package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/telemetry/prometheus"
)

// observabilityDir holds the Grafana dashboard and the Prometheus rules.
const observabilityDir = "../../observability"

// ourName matches the metric and label names of ours in a query or a rule
// file: the MCP conventions' (mcp_…, gen_ai_…) and mcpledger's. Labels a
// Prometheus server adds (instance, job) and PromQL's own words do not.
var ourName = regexp.MustCompile(`\b(?:mcpledger|mcp|gen_ai)_[a-z0-9_]+\b`)

// TestObservabilityNamesExported checks that every metric and label name
// the dashboard, the alert rules and their unit tests use is one that a
// live export shows: a guarded server and two clients on real SQLite
// ledgers report to the OpenTelemetry Prometheus exporter of package
// telemetry/prometheus, make calls that succeed, replay, conflict, wait,
// time out, go UNKNOWN and get resolved, and the test scrapes /metrics over
// HTTP. No list of names is kept by hand.
func TestObservabilityNamesExported(t *testing.T) {
	scrape := liveScrape(t)
	metrics, labels := exposedNames(scrape)
	files := []string{
		filepath.Join(observabilityDir, "grafana", "mcpledger.json"),
		filepath.Join(observabilityDir, "prometheus", "alerts.yml"),
		filepath.Join(observabilityDir, "prometheus", "alerts_test.yml"),
	}
	used := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("reading %s: %v", f, err)
		}
		text := string(b)
		if strings.HasSuffix(f, ".json") {
			// Only the queries: descriptions are prose.
			text = strings.Join(dashboardExprs(t, b), "\n")
		}
		for _, name := range uniq(ourName.FindAllString(text, -1)) {
			used++
			if !metrics[name] && !labels[name] {
				t.Errorf("%s uses %s, which the live export has as neither a metric nor a label", filepath.Base(f), name)
			}
		}
	}
	if used < 20 {
		t.Fatalf("found %d names of ours in the dashboard and rules; want them all read (is the pattern right?)", used)
	}
}

// exposedNames reads a Prometheus text scrape: every series name (with its
// _bucket, _sum and _count) and every label name.
func exposedNames(scrape string) (metrics, labels map[string]bool) {
	metrics, labels = map[string]bool{}, map[string]bool{}
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	for _, line := range strings.Split(scrape, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		metrics[name] = true
		for _, m := range label.FindAllStringSubmatch(rest, -1) {
			labels[m[1]] = true
		}
	}
	return metrics, labels
}

func uniq(ss []string) []string {
	sort.Strings(ss)
	out := ss[:0]
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// liveScrape runs the calls and returns the scrape of their metrics.
func liveScrape(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	prom, err := prometheus.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("prometheus.Serve = %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := prom.Shutdown(sctx); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	})
	open := func() *sqlite.Store {
		st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
		if err != nil {
			t.Fatalf("sqlite.Open = %v", err)
		}
		t.Cleanup(func() {
			if err := st.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
		return st
	}

	// The guarded server: pay runs the behaviour set in handler.
	var handler atomic.Pointer[func() error]
	var runs atomic.Int64
	srv := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)
	type payIn struct {
		Amount int `json:"amount"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "pay"}, func(ctx context.Context, req *mcp.CallToolRequest, in payIn) (*mcp.CallToolResult, any, error) {
		n := runs.Add(1)
		if h := handler.Load(); h != nil {
			if err := (*h)(); err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("pay_%d", n)}}}, nil, nil
	})
	guard := server.New(open(), &server.Options{
		MeterProvider:  prom.Provider,
		InProgressWait: 100 * time.Millisecond,
		Tenant:         func(context.Context, *mcp.CallToolRequest) (string, error) { return "acme", nil },
	})
	t.Cleanup(func() {
		if err := guard.Close(context.Background()); err != nil {
			t.Errorf("Guard.Close = %v", err)
		}
	})
	srv.AddReceivingMiddleware(guard.Middleware())

	cstore := open()
	dial := func(store ledger.Store, wait time.Duration) *client.Client {
		connect := func(ctx context.Context) (*mcp.ClientSession, error) {
			ct, st := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, st, nil); err != nil {
				return nil, err
			}
			return mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
		}
		c, err := client.Dial(ctx, connect, store, &client.Options{
			Tenant:         "acme",
			MeterProvider:  prom.Provider,
			Policy:         &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}},
			Retry:          &retry.Policy{MaxAttempts: 1},
			InProgressWait: wait,
		})
		if err != nil {
			t.Fatalf("client.Dial = %v", err)
		}
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Errorf("Client.Close = %v", err)
			}
		})
		return c
	}
	agent := dial(cstore, 5*time.Second)
	call := func(c *client.Client, key string, amount int) (*client.Outcome, error) {
		return c.Call(client.WithKey(ctx, key), &mcp.CallToolParams{Name: "pay", Arguments: map[string]any{"amount": amount}})
	}

	// A call and its repeat (a replay); the key with other arguments (a
	// conflict); another agent's repeat, which the server replays.
	for i := range 2 {
		if _, err := call(agent, "order-1", 10); err != nil {
			t.Fatalf("pay #%d = %v", i+1, err)
		}
	}
	if _, err := call(agent, "order-1", 11); !errors.Is(err, ledger.ErrKeyReused) {
		t.Fatalf("pay with other arguments = %v; want %v", err, ledger.ErrKeyReused)
	}
	if _, err := call(dial(open(), 5*time.Second), "order-1", 10); err != nil {
		t.Fatalf("another agent's pay = %v", err)
	}

	// A follower on the same ledger gives up waiting for a running call.
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	block := func() error {
		once.Do(func() { close(started) })
		<-release
		return nil
	}
	handler.Store(&block)
	done := make(chan error, 1)
	go func() {
		_, err := call(agent, "order-2", 20)
		done <- err
	}()
	<-started
	if _, err := call(dial(cstore, 20*time.Millisecond), "order-2", 20); !errors.Is(err, ledger.ErrInProgress) {
		t.Fatalf("follower = %v; want %v", err, ledger.ErrInProgress)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the call the follower waited for = %v", err)
	}

	// A handler's Go error: both ledgers say UNKNOWN; a person resolves
	// the client's record, as agentctl ledger reconcile does.
	fail := func() error { return errors.New("database gone") }
	handler.Store(&fail)
	if _, err := call(agent, "order-3", 30); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("pay whose handler failed = %v; want %v", err, client.ErrOutcomeUnknown)
	}
	before, err := cstore.Get(ctx, ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "pay", Key: "order-3"})
	if err != nil || before.State != ledger.StateUnknown {
		t.Fatalf("client record of order-3 = %+v, %v; want UNKNOWN", before, err)
	}
	after, err := ledger.Resolve(ctx, cstore, before, ledger.Finding{Verdict: ledger.VerdictNotRun, Method: ledger.MethodPerson, By: "ops", Evidence: "no payment at the bank"})
	if err != nil {
		t.Fatalf("Resolve = %v", err)
	}
	telemetry.NewResolutions(prom.Provider).Resolved(ctx, before, after, ledger.MethodPerson)
	// The client's other UNKNOWN (order-4) stays open for the gauges.
	if _, err := call(agent, "order-4", 40); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("second failing pay = %v; want %v", err, client.ErrOutcomeUnknown)
	}

	// Call events the event log could not take: a writer already closed.
	tel := telemetry.New(ledger.SideClient, &telemetry.Options{MeterProvider: prom.Provider, Events: cstore})
	if err := tel.Close(ctx); err != nil {
		t.Fatalf("Telemetry.Close = %v", err)
	}
	_, late := tel.Start(ctx, "pay")
	late.End(ctx, telemetry.Result{Outcome: ledger.OutcomeSucceeded, Tenant: "acme"})

	resp, err := http.Get(prom.URL())
	if err != nil {
		t.Fatalf("GET %s = %v", prom.URL(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %s, %v", prom.URL(), resp.Status, err)
	}
	return string(body)
}

// dashboardExprs is every target's query in a Grafana dashboard, panels
// inside rows included.
func dashboardExprs(t *testing.T, b []byte) []string {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var out []string
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}
