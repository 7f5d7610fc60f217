package main

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// collector receives OTLP over HTTP (protobuf), as an OpenTelemetry
// Collector's otlphttp receiver does, and keeps what it was sent.
type collector struct {
	url string

	mu      sync.Mutex // guards traces and metrics
	traces  []*colltrace.ExportTraceServiceRequest
	metrics []*collmetrics.ExportMetricsServiceRequest
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	mux := http.NewServeMux()
	handle := func(path string, newReq func() proto.Message, keep func(proto.Message), reply proto.Message) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			var body io.Reader = r.Body
			if r.Header.Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				body = zr
			}
			b, err := io.ReadAll(body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			m := newReq()
			if err := proto.Unmarshal(b, m); err != nil {
				t.Errorf("%s: not an OTLP protobuf request: %v", path, err)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			keep(m)
			out, err := proto.Marshal(reply)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(out)
		})
	}
	handle("/v1/traces", func() proto.Message { return &colltrace.ExportTraceServiceRequest{} }, func(m proto.Message) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.traces = append(c.traces, m.(*colltrace.ExportTraceServiceRequest))
	}, &colltrace.ExportTraceServiceResponse{})
	handle("/v1/metrics", func() proto.Message { return &collmetrics.ExportMetricsServiceRequest{} }, func(m proto.Message) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.metrics = append(c.metrics, m.(*collmetrics.ExportMetricsServiceRequest))
	}, &collmetrics.ExportMetricsServiceResponse{})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	c.url = hs.URL
	return c
}

// spans returns each exported span's name with its attributes and its
// resource's service.name.
func (c *collector) spans() []exported {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []exported
	for _, req := range c.traces {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, exported{name: s.Name, service: serviceOf(rs.Resource), attrs: attrMap(s.Attributes)})
				}
			}
		}
	}
	return out
}

// metricNames returns each exported metric's name with its resource's
// service.name.
func (c *collector) metricNames() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for _, req := range c.metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					out[m.Name] = serviceOf(rm.Resource)
				}
			}
		}
	}
	return out
}

type exported struct {
	name, service string
	attrs         map[string]string
}

func serviceOf(r *resourcepb.Resource) string { return attrMap(r.GetAttributes())["service.name"] }

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.GetStringValue()
	}
	return m
}

// TestOTLPExport runs agentctl call with the standard OTEL_* variables
// pointing at a collector: the call's span and metrics arrive over OTLP,
// under service.name agentctl (or OTEL_SERVICE_NAME).
func TestOTLPExport(t *testing.T) {
	for _, tc := range []struct {
		name, service string
		env           []string
	}{
		{"default service name", "agentctl", nil},
		{"OTEL_SERVICE_NAME", "billing-agent", []string{"OTEL_SERVICE_NAME=billing-agent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t)
			col := newCollector(t)
			env := append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"}, tc.env...)
			o := e.runEnv(nil, env, append([]string{"call", "--server", e.server, "--yes", "--key", "order-otel"}, pay...)...)
			o.wantExit(t, exitOK)
			if logs := logLines(o.stderr); logs != "" {
				t.Errorf("log lines on stderr at the default level: %q; want none", logs)
			}

			var call *exported
			for _, s := range col.spans() {
				if s.name == "tools/call create_payment" {
					call = &s
				}
			}
			if call == nil {
				t.Fatalf("no span tools/call create_payment among %+v", col.spans())
			}
			for k, want := range map[string]string{
				"gen_ai.tool.name": "create_payment", "gen_ai.operation.name": "execute_tool",
				"mcp.method.name": "tools/call", "mcpledger.side": "client", "mcpledger.outcome": "succeeded",
			} {
				if call.attrs[k] != want {
					t.Errorf("span attribute %s = %q; want %q", k, call.attrs[k], want)
				}
			}
			if call.service != tc.service {
				t.Errorf("span service.name = %q; want %q", call.service, tc.service)
			}
			metrics := col.metricNames()
			for _, name := range []string{"mcp.client.operation.duration", "mcpledger.calls", "mcpledger.execution.duration"} {
				if service, ok := metrics[name]; !ok || service != tc.service {
					t.Errorf("metric %s: exported %v under service.name %q; want it under %q (got %v)", name, ok, service, tc.service, metrics)
				}
			}
		})
	}
}

// TestNoExportWithoutOTELVariables: without the variables nothing is
// exported and nothing is waited for, even with a collector listening.
func TestNoExportWithoutOTELVariables(t *testing.T) {
	e := newE2E(t)
	col := newCollector(t)
	o := e.call(nil, append([]string{"--yes", "--key", "order-quiet"}, pay...)...)
	o.wantExit(t, exitOK)
	if n := len(col.spans()) + len(col.metricNames()); n != 0 {
		t.Errorf("collector got %d items; want none", n)
	}
}

func TestLogLevel(t *testing.T) {
	e := newE2E(t)
	quiet := e.call(nil, append([]string{"--yes", "--key", "order-log"}, pay...)...)
	quiet.wantExit(t, exitOK)
	if logs := logLines(quiet.stderr); logs != "" {
		t.Errorf("default level: log lines %q; want none", logs)
	}
	debug := e.call(nil, append([]string{"--log-level", "debug", "--yes", "--key", "order-log"}, pay...)...)
	debug.wantExit(t, exitOK)
	if !strings.Contains(debug.stderr, "level=DEBUG") || !strings.Contains(debug.stderr, "msg=\"mcpledger call\"") {
		t.Errorf("--log-level debug: stderr = %q; want the per-call debug line", debug.stderr)
	}
	if logs := logLines(debug.stderr); strings.Contains(logs, "order-log") {
		t.Errorf("--log-level debug: a log line shows the key, not its short hash: %q", logs)
	}
	env := e.runEnv(nil, []string{"MCPLEDGER_LOG_LEVEL=info"}, append([]string{"call", "--server", e.server, "--yes", "--key", "order-log"}, pay...)...)
	env.wantExit(t, exitOK)
	if !strings.Contains(env.stderr, "level=INFO") || strings.Contains(env.stderr, "level=DEBUG") {
		t.Errorf("MCPLEDGER_LOG_LEVEL=info: stderr = %q; want info lines and no debug", env.stderr)
	}
	e.run(nil, "--log-level", "loud", "ledger", "list").wantExit(t, exitUsage, "--log-level", "debug, info, warn, error or off")
}

// logLines keeps the slog lines of stderr, leaving agentctl's own messages.
func logLines(stderr string) string {
	var b strings.Builder
	for line := range strings.Lines(stderr) {
		if strings.HasPrefix(line, "time=") {
			b.WriteString(line)
		}
	}
	return b.String()
}
