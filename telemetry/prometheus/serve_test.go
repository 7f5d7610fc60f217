package prometheus_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/telemetry/prometheus"
)

// key is a key the scrape must never show.
const key = "order-7f3a-secret-key"

func TestServe(t *testing.T) {
	ctx := context.Background()
	prom, err := prometheus.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Serve = %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := prom.Shutdown(sctx); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	})
	// Two calls of "pay" observed by the telemetry of a client: one ran,
	// one was answered by a replay.
	tel := telemetry.New(ledger.SideClient, &telemetry.Options{MeterProvider: prom.Provider})
	_, ran := tel.Start(ctx, "pay")
	ran.Executed()
	ran.SetAttempts(1)
	ran.End(ctx, telemetry.Result{Outcome: ledger.OutcomeSucceeded, Key: key, State: ledger.StateSucceeded})
	_, replay := tel.Start(ctx, "pay")
	replay.End(ctx, telemetry.Result{Outcome: ledger.OutcomeReplayed, Key: key, State: ledger.StateSucceeded, Duplicate: true})

	// One UNKNOWN record of the proxy that a probe found, 2 s after.
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	before := &ledger.Record{ID: ledger.ID{Tenant: "default", Layer: ledger.LayerProxy, Tool: "pay", Key: key}, State: ledger.StateUnknown, UpdatedAt: at}
	after := *before
	after.State, after.UpdatedAt = ledger.StateSucceeded, at.Add(2*time.Second)
	tel.Resolved(ctx, before, &after, ledger.MethodProbe)

	body := scrape(t, prom.URL())
	const scope = `otel_scope_name="github.com/mcpledger/mcpledger",otel_scope_schema_url="` + telemetry.SchemaURL + `",otel_scope_version=""`
	for _, want := range []string{
		`# TYPE mcpledger_calls_total counter`,
		`mcpledger_calls_total{gen_ai_tool_name="pay",mcpledger_outcome="succeeded",mcpledger_side="client",` + scope + `} 1`,
		`mcpledger_calls_total{gen_ai_tool_name="pay",mcpledger_outcome="replayed",mcpledger_side="client",` + scope + `} 1`,
		`mcpledger_duplicate_hits_total{gen_ai_tool_name="pay",mcpledger_side="client",mcpledger_state="SUCCEEDED",` + scope + `} 1`,
		`# TYPE mcpledger_replay_duration_seconds histogram`,
		`mcpledger_replay_duration_seconds_count{gen_ai_tool_name="pay",mcpledger_side="client",` + scope + `} 1`,
		`mcpledger_call_attempts_count{gen_ai_tool_name="pay",mcpledger_side="client",` + scope + `} 1`,
		`# TYPE mcp_client_operation_duration_seconds histogram`,
		`mcp_client_operation_duration_seconds_count{gen_ai_operation_name="execute_tool",gen_ai_tool_name="pay",mcp_method_name="tools/call",mcpledger_outcome="succeeded",` + scope + `} 1`,
		`mcpledger_execution_duration_seconds_count{gen_ai_tool_name="pay",mcpledger_outcome="succeeded",mcpledger_side="client",` + scope + `} 1`,
		`# TYPE mcpledger_unknown_resolved_total counter`,
		`mcpledger_unknown_resolved_total{gen_ai_tool_name="pay",mcpledger_resolution_method="probe",mcpledger_side="client",mcpledger_state="SUCCEEDED",` + scope + `} 1`,
		`# TYPE mcpledger_unknown_resolution_duration_seconds histogram`,
		`mcpledger_unknown_resolution_duration_seconds_sum{gen_ai_tool_name="pay",mcpledger_resolution_method="probe",mcpledger_side="client",mcpledger_state="SUCCEEDED",` + scope + `} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s\n--- scrape:\n%s", want, body)
		}
	}
	if strings.Contains(body, key) {
		t.Errorf("scrape holds the key %q", key)
	}
}

func TestServeStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	prom, err := prometheus.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Serve = %v", err)
	}
	scrape(t, prom.URL())
	cancel()
	if err := prom.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown after the context ended = %v", err)
	}
	if resp, err := http.Get(prom.URL()); err == nil {
		resp.Body.Close()
		t.Fatalf("GET after Shutdown = %s; want a refused connection", resp.Status)
	}
}

func TestServeRefusesABusyAddress(t *testing.T) {
	prom, err := prometheus.Serve(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Serve = %v", err)
	}
	t.Cleanup(func() {
		if err := prom.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	})
	if second, err := prometheus.Serve(context.Background(), prom.Addr()); err == nil {
		second.Shutdown(context.Background())
		t.Fatalf("Serve(%s) on a busy address = nil error; want one", prom.Addr())
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s = %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s = %s %s; want 200 text/plain", url, resp.Status, resp.Header.Get("Content-Type"))
	}
	return string(b)
}
