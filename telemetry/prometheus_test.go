package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/telemetry"
)

func TestServePrometheus(t *testing.T) {
	ctx := context.Background()
	prom, err := telemetry.ServePrometheus(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ServePrometheus = %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := prom.Shutdown(sctx); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	})
	r := newRig(t, nil)
	c := r.newClient(openStore(t, nil), &client.Options{MeterProvider: prom.Provider})
	mustCall(t, c, keyed(), 5)
	mustCall(t, c, keyed(), 5)

	body := scrape(t, prom.URL())
	for _, want := range []string{
		`# TYPE mcpledger_calls_total counter`,
		`mcpledger_calls_total{otel_scope_name="github.com/mcpledger/mcpledger",otel_scope_schema_url="",otel_scope_version="",outcome="succeeded",side="client",tool="pay"} 1`,
		`mcpledger_calls_total{otel_scope_name="github.com/mcpledger/mcpledger",otel_scope_schema_url="",otel_scope_version="",outcome="replayed",side="client",tool="pay"} 1`,
		`mcpledger_duplicate_hits_total{otel_scope_name="github.com/mcpledger/mcpledger",otel_scope_schema_url="",otel_scope_version="",side="client",state="SUCCEEDED",tool="pay"} 1`,
		`# TYPE mcpledger_replay_duration_seconds histogram`,
		`mcpledger_replay_duration_seconds_count{otel_scope_name="github.com/mcpledger/mcpledger",otel_scope_schema_url="",otel_scope_version="",side="client",tool="pay"} 1`,
		`mcpledger_call_attempts_count{otel_scope_name="github.com/mcpledger/mcpledger",otel_scope_schema_url="",otel_scope_version="",side="client",tool="pay"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s\n--- scrape:\n%s", want, body)
		}
	}
	if strings.Contains(body, key) {
		t.Errorf("scrape holds the key %q", key)
	}
}

func TestServePrometheusStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	prom, err := telemetry.ServePrometheus(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ServePrometheus = %v", err)
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

func TestServePrometheusRefusesABusyAddress(t *testing.T) {
	prom, err := telemetry.ServePrometheus(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ServePrometheus = %v", err)
	}
	t.Cleanup(func() {
		if err := prom.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	})
	if second, err := telemetry.ServePrometheus(context.Background(), prom.Addr()); err == nil {
		second.Shutdown(context.Background())
		t.Fatalf("ServePrometheus(%s) on a busy address = nil error; want one", prom.Addr())
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
