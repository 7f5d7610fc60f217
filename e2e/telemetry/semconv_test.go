package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
)

// semconvInstruments are the instruments named by the MCP semantic
// conventions and our execution duration.
var semconvInstruments = []string{
	telemetry.MetricClientOperationDuration, telemetry.MetricServerOperationDuration, telemetry.MetricExecutionDuration,
}

// TestSemanticConventionNames checks the names against the typed
// conventions themselves, so a rename upstream fails here.
func TestSemanticConventionNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{telemetry.MetricClientOperationDuration, mcpconv.ClientOperationDuration{}.Name()},
		{telemetry.MetricServerOperationDuration, mcpconv.ServerOperationDuration{}.Name()},
		{string(telemetry.AttrTool), string(semconv.GenAIToolNameKey)},
		{string(telemetry.AttrOperation), string(semconv.GenAIOperationNameKey)},
		{string(telemetry.AttrMethod), string(semconv.McpMethodNameKey)},
		{string(telemetry.AttrSessionID), string(semconv.McpSessionIDKey)},
		{string(telemetry.AttrProtocolVersion), string(semconv.McpProtocolVersionKey)},
		{string(telemetry.AttrErrorType), string(semconv.ErrorTypeKey)},
		{string(telemetry.AttrNetworkTransport), string(semconv.NetworkTransportKey)},
		{string(telemetry.AttrServerAddress), string(semconv.ServerAddressKey)},
		{string(telemetry.AttrServerPort), string(semconv.ServerPortKey)},
		{telemetry.TransportPipe, semconv.NetworkTransportPipe.Value.AsString()},
		{telemetry.TransportTCP, semconv.NetworkTransportTCP.Value.AsString()},
	} {
		if c.got != c.want {
			t.Errorf("name %q; want the convention's %q", c.got, c.want)
		}
	}
	for _, k := range []string{string(telemetry.AttrSide), string(telemetry.AttrOutcome), string(telemetry.AttrState),
		string(telemetry.AttrReason), string(telemetry.AttrAttempts)} {
		if len(k) < len("mcpledger.") || k[:len("mcpledger.")] != "mcpledger." {
			t.Errorf("our attribute %q is not under mcpledger.", k)
		}
	}
}

// TestOperationDurations runs a fresh call, a tool error, a replay from the
// client's own ledger and a replay by the server (a second agent with its
// own ledger), and reads the durations the conventions define.
func TestOperationDurations(t *testing.T) {
	r := newRig(t, nil)
	mustCall(t, r.client, keyed(), 5)
	mustCall(t, r.client, keyed(), 5) // replayed by the client's ledger: no MCP request
	r.setHandler(func(context.Context, *mcp.CallToolRequest) error { return errors.New("insufficient funds") })
	if o := mustCall(t, r.client, client.WithKey(context.Background(), "order-2"), 7); !o.Result.IsError {
		t.Fatalf("Call(order-2) = %+v; want a tool error", o.Result)
	}
	other := r.newClient(openStore(t, nil), nil)
	mustCall(t, other, keyed(), 5) // the server replays order-1

	version := r.client.Session().InitializeResult().ProtocolVersion
	if version == "" {
		t.Fatal("the session negotiated no protocol version")
	}
	common := []string{"mcp.method.name=tools/call", "gen_ai.operation.name=execute_tool", "gen_ai.tool.name=pay",
		"mcp.protocol.version=" + version}
	with := func(extra ...string) []string { return append(slices.Clone(common), extra...) }
	for _, w := range []want{
		{telemetry.MetricClientOperationDuration, with("mcpledger.outcome=succeeded", "error.type="), 2},
		{telemetry.MetricClientOperationDuration, with("mcpledger.outcome=failed", "error.type=tool_error"), 1},
		{telemetry.MetricClientOperationDuration, with("mcpledger.outcome=replayed"), 0},
		{telemetry.MetricServerOperationDuration, with("mcpledger.outcome=succeeded", "error.type="), 1},
		{telemetry.MetricServerOperationDuration, with("mcpledger.outcome=replayed", "error.type="), 1},
		{telemetry.MetricServerOperationDuration, with("mcpledger.outcome=failed", "error.type=tool_error"), 1},
		{telemetry.MetricExecutionDuration, []string{"mcpledger.side=client", "gen_ai.tool.name=pay"}, 3},
		{telemetry.MetricExecutionDuration, []string{"mcpledger.side=client", "mcpledger.outcome=replayed"}, 0},
		{telemetry.MetricExecutionDuration, []string{"mcpledger.side=server", "mcpledger.outcome=succeeded"}, 1},
		{telemetry.MetricExecutionDuration, []string{"mcpledger.side=server", "mcpledger.outcome=failed"}, 1},
		{telemetry.MetricExecutionDuration, []string{"mcpledger.side=server", "mcpledger.outcome=replayed"}, 0},
	} {
		if got := r.total(w.name, w.match...); got != w.total {
			t.Errorf("%s%v = %v; want %v", w.name, w.match, got, w.total)
		}
	}
	// Every point of the client's operation duration is a call that sent
	// a request: 3 calls sent one (the other agent's too), 4 were made.
	if got := r.total(telemetry.MetricClientOperationDuration); got != 3 {
		t.Errorf("%s = %v points; want 3", telemetry.MetricClientOperationDuration, got)
	}

	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	wantBounds := []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	found := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if !slices.Contains(semconvInstruments, m.Name) {
				continue
			}
			found++
			if sm.Scope.SchemaURL != semconv.SchemaURL || m.Unit != "s" {
				t.Errorf("%s: schema %q unit %q; want %q and s", m.Name, sm.Scope.SchemaURL, m.Unit, semconv.SchemaURL)
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				if !slices.Equal(dp.Bounds, wantBounds) {
					t.Errorf("%s buckets %v; want the conventions' %v", m.Name, dp.Bounds, wantBounds)
				}
			}
		}
	}
	if found != len(semconvInstruments) {
		t.Errorf("found %d of the %d duration instruments", found, len(semconvInstruments))
	}

	// The spans carry the same names.
	for _, s := range r.spans.Ended() {
		for _, c := range []struct {
			key  string
			want string
		}{{"gen_ai.operation.name", "execute_tool"}, {"mcp.method.name", "tools/call"}, {"gen_ai.tool.name", "pay"}} {
			if got := attr(s, attribute.Key(c.key)); got != c.want {
				t.Errorf("span %s (%v) %s = %q; want %q", s.Name(), s.SpanKind(), c.key, got, c.want)
			}
		}
		if attr(s, telemetry.AttrOutcome) == "failed" && attr(s, telemetry.AttrErrorType) != "tool_error" {
			t.Errorf("failed span %s error.type = %q; want tool_error", s.Name(), attr(s, telemetry.AttrErrorType))
		}
		if s.SpanKind() == trace.SpanKindServer && attr(s, telemetry.AttrProtocolVersion) != version {
			t.Errorf("server span mcp.protocol.version = %q; want %q", attr(s, telemetry.AttrProtocolVersion), version)
		}
	}
}

// TestSessionIDOverHTTP calls through real streamable HTTP, whose sessions
// have ids: both spans carry it as mcp.session.id.
func TestSessionIDOverHTTP(t *testing.T) {
	r := newRig(t, nil)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return r.srv }, nil))
	t.Cleanup(hs.Close)
	ctx := context.Background()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatalf("Connect(%s) = %v", hs.URL, err)
	}
	t.Cleanup(func() { session.Close() })
	c := client.New(session, openStore(t, nil), &client.Options{
		Tenant:         tenant,
		Policy:         &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}},
		MeterProvider:  r.mp,
		TracerProvider: r.tp,
	})
	t.Cleanup(func() { c.Close() })
	mustCall(t, c, keyed(), 5)
	if session.ID() == "" {
		t.Fatal("the streamable HTTP session has no id")
	}
	for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		s := onlySpan(t, r.spans.Ended(), kind)
		if got := attr(s, telemetry.AttrSessionID); got != session.ID() {
			t.Errorf("%v span mcp.session.id = %q; want the session's %q", kind, got, session.ID())
		}
	}
}

// TestPeerOverHTTP calls through real streamable HTTP on 127.0.0.1: the
// client's span and operation duration carry network.transport=tcp and the
// server's address and port, as its Options.Peer says; the server's carry
// network.transport=tcp, which the request's HTTP headers show, and no
// server address (the conventions have none on that side).
func TestPeerOverHTTP(t *testing.T) {
	r := newRig(t, nil)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return r.srv }, nil))
	t.Cleanup(hs.Close)
	ctx := context.Background()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatalf("Connect(%s) = %v", hs.URL, err)
	}
	t.Cleanup(func() { _ = session.Close() })
	peer := telemetry.PeerOfURL(hs.URL)
	u, err := url.Parse(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	if peer.Transport != "tcp" || peer.Address != "127.0.0.1" || strconv.Itoa(peer.Port) != u.Port() {
		t.Fatalf("PeerOfURL(%s) = %+v; want tcp, 127.0.0.1 and port %s", hs.URL, peer, u.Port())
	}
	c := client.New(session, openStore(t, nil), &client.Options{
		Tenant:         tenant,
		Policy:         &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}},
		MeterProvider:  r.mp,
		TracerProvider: r.tp,
		Peer:           peer,
	})
	t.Cleanup(func() { _ = c.Close() })
	mustCall(t, c, keyed(), 5)

	clientWant := []string{"network.transport=tcp", "server.address=127.0.0.1", "server.port=" + u.Port()}
	serverWant := []string{"network.transport=tcp", "server.address=", "server.port="}
	if got := r.total(telemetry.MetricClientOperationDuration, clientWant...); got != 1 {
		t.Errorf("%s%v = %v points; want 1", telemetry.MetricClientOperationDuration, clientWant, got)
	}
	if got := r.total(telemetry.MetricServerOperationDuration, serverWant...); got != 1 {
		t.Errorf("%s%v = %v points; want 1", telemetry.MetricServerOperationDuration, serverWant, got)
	}
	for kind, want := range map[trace.SpanKind][]string{trace.SpanKindClient: clientWant, trace.SpanKindServer: serverWant} {
		s := onlySpan(t, r.spans.Ended(), kind)
		for _, kv := range want {
			k, v, _ := strings.Cut(kv, "=")
			if got := attr(s, attribute.Key(k)); got != v {
				t.Errorf("%v span %s = %q; want %q", kind, k, got, v)
			}
		}
	}
}

// TestNoPeerInMemory: over in-memory transports, with no Options.Peer,
// neither side claims a transport or an address.
func TestNoPeerInMemory(t *testing.T) {
	r := newRig(t, nil)
	mustCall(t, r.client, keyed(), 5)
	none := []string{"network.transport=", "server.address=", "server.port="}
	for _, name := range []string{telemetry.MetricClientOperationDuration, telemetry.MetricServerOperationDuration} {
		if got, all := r.total(name, none...), r.total(name); got != 1 || all != 1 {
			t.Errorf("%s%v = %v of %v points; want 1 of 1", name, none, got, all)
		}
	}
	for _, s := range r.spans.Ended() {
		if got := attr(s, telemetry.AttrNetworkTransport); got != "" {
			t.Errorf("%v span network.transport = %q; want none", s.SpanKind(), got)
		}
	}
}

// TestPeerOfURL: the port the URL names, else its scheme's.
func TestPeerOfURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want telemetry.Peer
	}{
		{"http://127.0.0.1:8080/mcp", telemetry.Peer{Transport: "tcp", Address: "127.0.0.1", Port: 8080}},
		{"https://mcp.example.com/mcp", telemetry.Peer{Transport: "tcp", Address: "mcp.example.com", Port: 443}},
		{"http://[::1]/mcp", telemetry.Peer{Transport: "tcp", Address: "::1", Port: 80}},
		{"::not a url", telemetry.Peer{Transport: "tcp"}},
	} {
		t.Run(tc.url, func(t *testing.T) {
			if got := telemetry.PeerOfURL(tc.url); got != tc.want {
				t.Errorf("PeerOfURL(%q) = %+v; want %+v", tc.url, got, tc.want)
			}
		})
	}
}

// TestUnknownGauge reads mcpledger.records.unknown.open from a real ledger
// at each collection, and not at all once the telemetry is closed.
func TestUnknownGauge(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	store := openStore(t, nil)
	tel := telemetry.New(ledger.SideServer, &telemetry.Options{MeterProvider: mp, Unknown: store})
	gauge := func() (value float64, points int) {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatalf("Collect = %v", err)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != telemetry.MetricUnknownOpen {
					continue
				}
				g, ok := m.Data.(metricdata.Gauge[int64])
				if !ok {
					t.Fatalf("%s is %T; want an int64 gauge", m.Name, m.Data)
				}
				for _, dp := range g.DataPoints {
					if side, _ := dp.Attributes.Value(telemetry.AttrSide); side.AsString() != "server" {
						t.Errorf("gauge point with side %q; want server", side.AsString())
					}
					value += float64(dp.Value)
					points++
				}
			}
		}
		return value, points
	}
	if v, n := gauge(); v != 0 || n != 1 {
		t.Fatalf("gauge on an empty ledger = %v over %d points; want 0 over 1", v, n)
	}
	reach := func(key string, to ledger.State) ledger.ID {
		t.Helper()
		id := ledger.ID{Tenant: tenant, Tool: "pay", Key: key}
		c, err := store.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "o"})
		if err != nil || !c.Won {
			t.Fatalf("Claim(%q) = %+v, %v", key, c, err)
		}
		if _, err := store.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: to, Owner: "o", Fence: c.Record.Fence,
			Result: []byte(`{"content":[]}`), ErrorKind: "ambiguous"}); err != nil {
			t.Fatalf("Transition(%q to %s) = %v", key, to, err)
		}
		return id
	}
	first := reach("k1", ledger.StateUnknown)
	reach("k2", ledger.StateUnknown)
	reach("k3", ledger.StateSucceeded)
	if v, _ := gauge(); v != 2 {
		t.Errorf("gauge with two UNKNOWN records = %v; want 2", v)
	}
	if _, err := store.Transition(ctx, ledger.Transition{ID: first, From: ledger.StateUnknown, To: ledger.StateSucceeded,
		Result: []byte(`{"content":[]}`)}); err != nil {
		t.Fatal(err)
	}
	if v, _ := gauge(); v != 1 {
		t.Errorf("gauge after reconciling one = %v; want 1", v)
	}
	closeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := tel.Close(closeCtx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if _, n := gauge(); n != 0 {
		t.Errorf("gauge after Close has %d points; want none (the store is no longer asked)", n)
	}
}

// TestUnknownGaugeFailedCount: a store that cannot count (here, closed)
// gives the gauge no value for that collection, never a wrong zero, and
// the error goes to the OpenTelemetry error handler.
func TestUnknownGaugeFailedCount(t *testing.T) {
	ctx := context.Background()
	var handled []error
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { handled = append(handled, err) }))
	t.Cleanup(func() { otel.SetErrorHandler(prev) })

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	store := openStore(t, nil)
	tel := telemetry.New(ledger.SideClient, &telemetry.Options{MeterProvider: mp, Unknown: store})
	t.Cleanup(func() { tel.Close(ctx) })
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatalf("Collect = %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if (m.Name == telemetry.MetricUnknownOpen || m.Name == telemetry.MetricApprovalOpen) && len(m.Data.(metricdata.Gauge[int64]).DataPoints) > 0 {
				t.Errorf("gauge of a store that cannot count = %+v; want no point", m.Data)
			}
		}
	}
	// One error per count: the UNKNOWN records', then the approvals'.
	if len(handled) != 2 || !strings.Contains(handled[0].Error(), telemetry.MetricUnknownOpen) || !strings.Contains(handled[1].Error(), telemetry.MetricApprovalOpen) {
		t.Errorf("errors handled = %v; want one naming %s, one naming %s", handled, telemetry.MetricUnknownOpen, telemetry.MetricApprovalOpen)
	}
}

// TestResponseStatusCode: a call the server refuses with a JSON-RPC error
// (an unknown tool: -32602) carries the code as rpc.response.status_code
// on the client's operation duration and span; a result carries none.
func TestResponseStatusCode(t *testing.T) {
	r := newRig(t, nil)
	mustCall(t, r.client, keyed(), 5)
	ctx := client.WithKey(context.Background(), "nope-1")
	if _, err := r.client.Call(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{"amount": 1}}); err == nil {
		t.Fatal("Call(nope) = nil error; want the server's -32602")
	}
	code := string(telemetry.AttrResponseStatusCode) + "=-32602"
	if got := r.total(telemetry.MetricClientOperationDuration, code); got != 1 {
		t.Errorf("%s[%s] = %v points; want 1", telemetry.MetricClientOperationDuration, code, got)
	}
	if got := r.total(telemetry.MetricClientOperationDuration, string(telemetry.AttrResponseStatusCode)+"="); got != 1 {
		t.Errorf("%s without a status code = %v points; want 1 (the call that got a result)", telemetry.MetricClientOperationDuration, got)
	}
	found := false
	for _, s := range r.spans.Ended() {
		if s.SpanKind() == trace.SpanKindClient && attr(s, telemetry.AttrResponseStatusCode) == "-32602" {
			found = true
		}
	}
	if !found {
		t.Error("no client span carries rpc.response.status_code -32602")
	}
}
